//! A local semantic signal: texts as vectors from all-MiniLM-L6-v2 run in-process
//! ([`Encoder`], int8 weights embedded in the binary), so a question finds a memory that says the
//! same thing in other words, offline. `models/minilm-l6.bin` (written by
//! `tools/embed/export.py`) holds the model's WordPiece vocabulary, read here, then the encoder's
//! tensors; the tokenizer is [`tokenize`]. Vectors are stored as int8 with one scale ([`Code`]) plus their
//! signs ([`Bits`]) for a fast first pass over a whole bank.

pub mod tokenize;

use std::sync::OnceLock;

pub use ovmem_encoder::Encoder;

/// The model file: see `tools/embed/export.py` (`write`) for the layout.
static MODEL_FILE: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/models/minilm-l6.bin"));

/// Dimensions of a vector.
pub const DIMS: usize = ovmem_encoder::HIDDEN;
/// Bytes of a vector's signs.
pub const BITS: usize = DIMS / 8;
/// Tokens of a memory read at most (its beginning; the prompt comes first): the model was
/// trained on up to 128, and its cost grows with every one.
const MAX_TOKENS: usize = 128;
/// Tokens of a question read at most: the prompt hook encodes it while the agent waits.
const QUESTION_TOKENS: usize = 64;

/// The model's unknown token, which carries no meaning here.
const UNK: u32 = 100;

/// The embedded model (read once per process).
pub fn encoder() -> &'static Encoder {
    static ENCODER: OnceLock<Encoder> = OnceLock::new();
    ENCODER.get_or_init(|| {
        let tensors = Model::parse(MODEL_FILE).map_or(MODEL_FILE.len(), |(_, o)| o);
        Encoder::parse(MODEL_FILE, tensors).expect("the embedded encoder is well-formed")
    })
}

/// The model's vocabulary.
pub struct Model {
    n: usize,
    offsets: &'static [u8],
    sorted: &'static [u8],
    text: &'static [u8],
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(b[4 * i..4 * i + 4].try_into().expect("4 bytes"))
}

impl Model {
    /// The embedded model's vocabulary (its layout is checked once).
    pub fn get() -> &'static Model {
        static MODEL: OnceLock<Model> = OnceLock::new();
        MODEL.get_or_init(|| Model::parse(MODEL_FILE).expect("the embedded model file is well-formed").0)
    }

    /// The vocabulary and the offset of what follows it (the encoder's tensors).
    fn parse(b: &'static [u8]) -> Option<(Model, usize)> {
        if b.get(..8)? != b"OVBERT02" {
            return None;
        }
        let n = u32_at(b.get(8..12)?, 0) as usize;
        let mut o: usize = 12;
        let mut take = |len: usize| -> Option<&'static [u8]> {
            let s = b.get(o..o.checked_add(len)?)?;
            o += len;
            Some(s)
        };
        let offsets = take(4 * (n + 1))?;
        let sorted = take(4 * n)?;
        let text = take(u32_at(offsets, n) as usize)?;
        Some((Model { n, offsets, sorted, text }, o))
    }

    /// The vocabulary's size.
    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Token `id`'s text.
    pub fn token(&self, id: u32) -> &'static str {
        let (a, b) = (u32_at(self.offsets, id as usize) as usize, u32_at(self.offsets, id as usize + 1) as usize);
        std::str::from_utf8(&self.text[a..b]).unwrap_or("")
    }

    /// The id of a token, by binary search over the ids sorted by token bytes.
    pub fn id(&self, token: &str) -> Option<u32> {
        let (mut lo, mut hi) = (0, self.n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let id = u32_at(self.sorted, mid);
            match self.token(id).as_bytes().cmp(token.as_bytes()) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(id),
            }
        }
        None
    }

    /// The token ids of a text, as the model's tokenizer gives them (without `[CLS]`/`[SEP]`).
    pub fn tokenize(&self, text: &str) -> Vec<u32> {
        let mut norm = String::with_capacity(text.len());
        tokenize::normalise(text, &mut norm);
        let mut out = Vec::new();
        let mut buf = String::new();
        for w in tokenize::words(&norm) {
            tokenize::wordpiece(w, |t| self.id(t), UNK, &mut buf, &mut out);
        }
        out
    }

    /// A text's vector (unit length), or `None` when no token of it is known.
    pub fn embed(&self, text: &str) -> Option<Vec<f32>> {
        self.embed_parts(&[text])
    }

    /// One vector for several texts (a memory's prompt, reply and topic), the first
    /// [`MAX_TOKENS`] tokens of them in order.
    pub fn embed_parts(&self, parts: &[&str]) -> Option<Vec<f32>> {
        // Lazily, part by part: a part past the first MAX_TOKENS tokens is never tokenized.
        let ids: Vec<u32> =
            parts.iter().flat_map(|p| self.tokenize(head(p))).filter(|&id| id != UNK).take(MAX_TOKENS).collect();
        self.encode(&ids)
    }

    /// A question's vector, when it says something the model can read: at least two words it
    /// knows whole (a word that is one token of the vocabulary, letters only). A question that is
    /// an identifier, a code or a made-up word (`zqvorblinx7731`, `ERR_CONN_RESET`) is broken into
    /// sub-word pieces whose mean means nothing; it is asked by its words alone (`None`).
    pub fn question(&self, text: &str) -> Option<Vec<f32>> {
        let ids = self.tokenize(head(text));
        let whole = |i: usize| {
            let t = self.token(ids[i]);
            !t.starts_with("##")
                && t.chars().all(char::is_alphabetic)
                && ids.get(i + 1).is_none_or(|&n| !self.token(n).starts_with("##"))
        };
        (0..ids.len()).filter(|&i| whole(i)).nth(1)?;
        let known: Vec<u32> = ids.into_iter().filter(|&id| id != UNK).take(QUESTION_TOKENS).collect();
        self.encode(&known)
    }

    /// The model's sentence vector for word-piece ids (`None` without any).
    fn encode(&self, ids: &[u32]) -> Option<Vec<f32>> {
        (!ids.is_empty()).then(|| encoder().encode(ids))
    }
}

/// The beginning of a text that is read: no more than [`MAX_TOKENS`] tokens are.
fn head(s: &str) -> &str {
    &s[..floor_char(s, MAX_TOKENS * 12)]
}

/// The largest char boundary of `s` at or below `i`.
fn floor_char(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A stored vector: int8 components and the scale that gives them back.
#[derive(Debug, Clone, PartialEq)]
pub struct Code {
    pub scale: f32,
    pub q: [i8; DIMS],
}

/// Bytes of an encoded [`Code`].
pub const CODE_BYTES: usize = 4 + DIMS;

impl Code {
    pub fn new(v: &[f32]) -> Code {
        let max = v.iter().fold(0f32, |m, x| m.max(x.abs())).max(1e-12);
        let scale = max / 127.0;
        let mut q = [0i8; DIMS];
        for (o, x) in q.iter_mut().zip(v) {
            *o = (x / scale).round().clamp(-127.0, 127.0) as i8;
        }
        Code { scale, q }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(CODE_BYTES);
        b.extend_from_slice(&self.scale.to_le_bytes());
        b.extend(self.q.iter().map(|&x| x as u8));
        b
    }

    /// An encoded code's scale and int8 components (`None`: not a code, e.g. the empty row of a
    /// memory with no known token).
    fn parts(bytes: &[u8]) -> Option<(f32, impl Iterator<Item = f32> + '_)> {
        if bytes.len() != CODE_BYTES {
            return None;
        }
        let scale = f32::from_le_bytes(bytes[..4].try_into().expect("4 bytes"));
        Some((scale, bytes[4..].iter().map(|&x| (x as i8) as f32)))
    }

    /// The vector an encoded code stands for (`None`: not a code).
    pub fn decode(bytes: &[u8]) -> Option<Vec<f32>> {
        let (scale, q) = Self::parts(bytes)?;
        Some(q.map(|x| x * scale).collect())
    }

    /// Cosine of a unit query with the stored vector a code came from, read from its bytes (0 for
    /// what is not a code).
    pub fn cosine(query: &[f32], bytes: &[u8]) -> f32 {
        let Some((scale, q)) = Self::parts(bytes) else { return 0.0 };
        query.iter().zip(q).map(|(a, c)| a * c).sum::<f32>() * scale
    }
}

/// The dot product of two vectors (their cosine, when both are unit vectors).
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// A vector's signs, one bit per dimension: Hamming distance between two of them tracks the
/// angle between the vectors, for a first pass that reads 32 bytes per memory.
pub type Bits = [u8; BITS];

pub fn bits(v: &[f32]) -> Bits {
    let mut b = [0u8; BITS];
    for (i, x) in v.iter().enumerate() {
        if *x > 0.0 {
            b[i / 8] |= 1 << (i % 8);
        }
    }
    b
}

/// Bits where two sign vectors differ.
pub fn hamming(a: &[u8], b: &[u8]) -> u32 {
    a.chunks_exact(8)
        .zip(b.chunks_exact(8))
        .map(|(x, y)| {
            (u64::from_le_bytes(x.try_into().expect("8 bytes")) ^ u64::from_le_bytes(y.try_into().expect("8 bytes")))
                .count_ones()
        })
        .sum()
}
