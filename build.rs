//! Embeds every file under `templates/` and `manifests/legacy/` into the binary, so adding a
//! template or a legacy catalog entry is a data file, never a code change.

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

fn main() {
    let out = std::env::var("OUT_DIR").unwrap();
    let code = table("TEMPLATES", "templates") + &table("LEGACY", "manifests/legacy");
    std::fs::write(Path::new(&out).join("embedded.rs"), code).unwrap();
}
