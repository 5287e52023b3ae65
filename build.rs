//! Embeds every file under `templates/` and `manifests/legacy/` into the binary, so adding a
//! template or a legacy catalog entry is a data file, never a code change; and writes the model
//! file with its matrices packed for the int8 multiply (`ovmem_encoder::pack`), which the binary
//! embeds in place of `models/minilm-l6.bin`.

use std::fmt::Write as _;
use std::path::Path;

fn collect(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect(root, &p, out);
        } else {
            out.push(p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/"));
        }
    }
}

fn table(name: &str, dir: &str) -> String {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    let root = Path::new(&manifest_dir).join(dir);
    println!("cargo:rerun-if-changed={dir}");
    let mut files = Vec::new();
    collect(&root, &root, &mut files);
    let mut s = format!("pub static {name}: &[(&str, &str)] = &[\n");
    for f in files {
        println!("cargo:rerun-if-changed={dir}/{f}");
        let _ = writeln!(s, "    ({f:?}, include_str!(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/{dir}/{f}\"))),");
    }
    s.push_str("];\n");
    s
}

/// Where the encoder's tensors begin in a model file: past its magic, and its vocabulary (count
/// n, n+1 offsets, n sorted ids, the token text); see `tools/embed/export.py`.
fn tensors_at(b: &[u8]) -> usize {
    assert_eq!(&b[..8], b"OVBERT02", "models/minilm-l6.bin is not an ovmem model file");
    let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap()) as usize;
    let n = u32_at(8);
    let text = u32_at(12 + 4 * n);
    12 + 8 * n + 4 + text
}

fn main() {
    let out = std::env::var("OUT_DIR").unwrap();
    let code = table("TEMPLATES", "templates") + &table("LEGACY", "manifests/legacy");
    std::fs::write(Path::new(&out).join("embedded.rs"), code).unwrap();

    println!("cargo:rerun-if-changed=models/minilm-l6.bin");
    let model = std::fs::read("models/minilm-l6.bin").expect("models/minilm-l6.bin (the embedded model) is readable");
    let packed = ovmem_encoder::pack(&model, tensors_at(&model)).expect("models/minilm-l6.bin's tensors pack");
    std::fs::write(Path::new(&out).join("minilm-l6.packed.bin"), packed).unwrap();
}
