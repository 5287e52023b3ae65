#!/bin/sh
# ovmem {{HARNESS}} {{EVENT}} hook: long-term memory for this agent.
# Managed by ovmem; `ovmem uninstall --harness {{HARNESS}}` removes this file.
exec {{OVMEM_BIN}} hook {{HARNESS}} {{EVENT}}
