//! Embeds every file under `templates/` and `manifests/legacy/` into the binary, so adding a
//! template or a legacy catalog entry is a data file, never a code change; writes the model
//! file with its matrices packed for the int8 multiply (`pack`), which the binary
//! embeds in place of `models/minilm-l6.bin`; and the `stop-words` crate's lists as one string
//! per language (`stop_words`).

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

/// Every NLTK stop-word list of the `stop-words` crate, keyed by its language code, its words one
/// per line. The crate's own tables hold a string slice per word, and each slice in a position-
/// independent binary is a relocation that every process applies as it starts (11,000 of the
/// binary's 27,000, on 43 pages written before `main`); a list as one string is one.
fn stop_words() -> String {
    let mut s = String::from("pub static STOP_WORDS: &[(&str, &str)] = &[\n");
    for code in stop_words::available_languages() {
        let words = stop_words::get(code);
        assert!(words.iter().all(|w| !w.is_empty() && !w.contains('\n')), "one word per line: {code}");
        let _ = writeln!(s, "    ({code:?}, {:?}),", words.join("\n"));
    }
    s.push_str("];\n");
    s
}

/// Outputs per block and inputs per group of a packed matrix (`crates/encoder`'s `BLOCK`, `GROUP`).
const BLOCK: usize = 16;
const GROUP: usize = 4;

/// The layout the encoder's `Packed` reads (blocks of `BLOCK` outputs, each `GROUP` of inputs
/// side by side), from a row-major `rows`×`cols` int8 matrix; `None` when its shape does not
/// divide into blocks and groups.
fn pack_matrix(q: &[i8], rows: usize, cols: usize) -> Option<Vec<i8>> {
    // The AVX2 path moves signs onto the weights: -128 has no negation in int8 (the export
    // writes -127..=127).
    if !rows.is_multiple_of(BLOCK) || !cols.is_multiple_of(GROUP) || q.len() != rows * cols || q.contains(&i8::MIN) {
        return None;
    }
    let mut out = Vec::with_capacity(q.len());
    for b in 0..rows / BLOCK {
        for g in 0..cols / GROUP {
            for l in 0..BLOCK {
                let r = b * BLOCK + l;
                out.extend_from_slice(&q[r * cols + g * GROUP..r * cols + (g + 1) * GROUP]);
            }
        }
    }
    Some(out)
}

/// The model file with every dense layer's matrix packed (the encoder's `Packed`, tensor kind 2:
/// rows, cols, then `rows` f32 scales, `rows` i32 sums of weights, the packed int8 weights); `tensors` is
/// where the encoder's tensors begin (past the vocabulary). What precedes them and every other
/// tensor are copied as they are: the committed file stays the one the export wrote, and the
/// binary holds the weights as they are multiplied. Here rather than in the encoder crate, so
/// that the packaged crate builds alone (`cargo package`).
fn pack(b: &[u8], tensors: usize) -> Option<Vec<u8>> {
    let mut out = b.get(..tensors)?.to_vec();
    let mut o = tensors;
    let mut take = |n: usize| -> Option<&[u8]> {
        let s = b.get(o..o.checked_add(n)?)?;
        o += n;
        Some(s)
    };
    let count = take(4)?;
    out.extend_from_slice(count);
    for _ in 0..u32::from_le_bytes(count.try_into().ok()?) {
        let len = *take(1)?.first()? as usize;
        let name = take(len)?;
        let kind = *take(1)?.first()?;
        let shape = take(8)?;
        let rows = u32::from_le_bytes(shape[..4].try_into().ok()?) as usize;
        let cols = u32::from_le_bytes(shape[4..].try_into().ok()?) as usize;
        out.push(len as u8);
        out.extend_from_slice(name);
        match kind {
            1 if name.starts_with(b"encoder.layer.") => {
                let scales = take(rows.checked_mul(4)?)?;
                // SAFETY: i8 and u8 have the same size and alignment.
                let q: &[i8] = {
                    let q = take(rows.checked_mul(cols)?)?;
                    unsafe { std::slice::from_raw_parts(q.as_ptr().cast::<i8>(), q.len()) }
                };
                let packed = pack_matrix(q, rows, cols)?;
                out.push(2);
                out.extend_from_slice(shape);
                out.extend_from_slice(scales);
                for row in q.chunks_exact(cols) {
                    out.extend_from_slice(&row.iter().map(|&v| v as i32).sum::<i32>().to_le_bytes());
                }
                out.extend(packed.iter().map(|&v| v as u8));
            }
            0 | 1 => {
                out.push(kind);
                out.extend_from_slice(shape);
                let size =
                    if kind == 0 { rows.checked_mul(cols)?.checked_mul(4)? } else { rows.checked_mul(4 + cols)? };
                out.extend_from_slice(take(size)?);
            }
            _ => return None,
        }
    }
    (o == b.len()).then_some(out)
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
    std::fs::write(Path::new(&out).join("stop_words.rs"), stop_words()).unwrap();

    println!("cargo:rerun-if-changed=models/minilm-l6.bin");
    let model = std::fs::read("models/minilm-l6.bin").expect("models/minilm-l6.bin (the embedded model) is readable");
    let packed = pack(&model, tensors_at(&model)).expect("models/minilm-l6.bin's tensors pack");
    std::fs::write(Path::new(&out).join("minilm-l6.packed.bin"), packed).unwrap();
}
