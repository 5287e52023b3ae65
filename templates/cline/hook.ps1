# ovmem {{HARNESS}} {{EVENT}} hook: long-term memory for this agent.
# Managed by ovmem; `ovmem uninstall --harness {{HARNESS}}` removes this file.
# Stdin and stdout as UTF-8 (Windows PowerShell 5.1 would pipe ASCII and read the OEM code page).
$utf8 = [System.Text.UTF8Encoding]::new($false)
[Console]::InputEncoding = $utf8
[Console]::OutputEncoding = $utf8
$OutputEncoding = $utf8
[Console]::In.ReadToEnd() | {{OVMEM_BIN_PS}} hook {{HARNESS}} {{EVENT}}
exit $LASTEXITCODE
