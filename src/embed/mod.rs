//! A local semantic signal: texts as vectors from a static embedding table distilled from
//! all-MiniLM-L6-v2 (`models/minilm-static.bin`, built by `tools/embed/distill.py` from the
//! pinned model and embedded in the binary), so a question finds a memory that says the same
//! thing in other words, offline and in well under a millisecond. A text's vector is the
//! normalised mean of its tokens' rows (each row already weighted by how rare its token is).
//! Vectors are stored as int8 with one scale ([`Code`]) plus their signs ([`Bits`]) for a fast
//! first pass over a whole bank.

pub mod tokenize;

use std::sync::OnceLock;

/// The table: see `tools/embed/distill.py` (`write`) for the layout.
static TABLE: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/models/minilm-static.bin"));

/// Dimensions of a vector.
pub const DIMS: usize = 256;
/// Bytes of a vector's signs.
pub const BITS: usize = DIMS / 8;
/// Tokens of a text read at most (its beginning): a static model's mean blurs past that.
const MAX_TOKENS: usize = 384;

/// The model's unknown token, which carries no meaning here.
const UNK: u32 = 100;

pub struct Model {
    n: usize,
    offsets: &'static [u8],
    sorted: &'static [u8],
    scales: &'static [u8],
    text: &'static [u8],
    rows: &'static [i8],
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(b[4 * i..4 * i + 4].try_into().expect("4 bytes"))
}

impl Model {
    /// The embedded model (its layout is checked once).
    pub fn get() -> &'static Model {
        static MODEL: OnceLock<Model> = OnceLock::new();
        MODEL.get_or_init(|| Model::parse(TABLE).expect("the embedded embedding table is well-formed"))
    }

    fn parse(b: &'static [u8]) -> Option<Model> {
        if b.get(..8)? != b"OVEMB001" {
            return None;
        }
        let n = u32_at(&b[8..], 0) as usize;
        let dims = u32_at(&b[8..], 1) as usize;
        if dims != DIMS {
            return None;
        }
        let mut o = 16;
        let mut take = |len: usize| -> Option<&'static [u8]> {
            let s = b.get(o..o + len)?;
            o += len;
            Some(s)
        };
        let offsets = take(4 * (n + 1))?;
        let sorted = take(4 * n)?;
        let scales = take(4 * n)?;
        let text = take(u32_at(offsets, n) as usize)?;
        let rows = take(n * DIMS)?;
        // SAFETY: i8 and u8 have the same size and alignment.
        let rows = unsafe { std::slice::from_raw_parts(rows.as_ptr().cast::<i8>(), rows.len()) };
        Some(Model { n, offsets, sorted, scales, text, rows })
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
        self.mean(&ids)
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
        let known: Vec<u32> = ids.into_iter().filter(|&id| id != UNK).take(MAX_TOKENS).collect();
        self.mean(&known)
    }

    /// The normalised mean of tokens' rows (each scaled back from int8).
    fn mean(&self, ids: &[u32]) -> Option<Vec<f32>> {
        let mut sum = [0f32; DIMS];
        for &id in ids {
            let scale = f32::from_le_bytes(self.scales[4 * id as usize..4 * id as usize + 4].try_into().ok()?);
            let row = &self.rows[id as usize * DIMS..(id as usize + 1) * DIMS];
            for (s, &r) in sum.iter_mut().zip(row) {
                *s += r as f32 * scale;
            }
        }
        let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt();
        (!ids.is_empty() && norm > 0.0).then(|| sum.iter().map(|x| x / norm).collect())
    }
}

/// The beginning of a text that is read: a static model's mean blurs past [`MAX_TOKENS`] tokens.
fn head(s: &str) -> &str {
    &s[..floor_char(s, MAX_TOKENS * 12)]
}

/// The largest char boundary of `s` at or below `i`.
/// Everyday lines of a coding-agent chat about nothing in particular: what a question's vector
/// is compared with to learn how near *unrelated* text sits to it (see [`Model::background`]).
const UNRELATED: &[&str] = &[
    "ok thanks",
    "looks good to me",
    "let me check that",
    "can you run the tests again",
    "I updated the file",
    "what is the status",
    "please fix the bug",
    "done, anything else?",
    "the meeting is at noon",
    "we talked about this yesterday",
    "here is the summary",
    "that makes sense",
    "try it again",
    "I will take a look",
    "the build passed",
    "sure, go ahead",
    "it works now",
    "thanks for the help",
    "where is the file",
    "how does this work",
    "what does this do",
    "why did it fail",
    "we should write some notes",
    "this is the plan for today",
    "the change is small",
    "I don't know yet",
    "remember this for later",
    "it was merged last week",
    "the weather is nice today",
];

impl Model {
    /// How near unrelated text comes to `query` (a unit vector) on average: its mean cosine with
    /// everyday chat ([`UNRELATED`]). A static embedding puts every text at some distance from
    /// every other (0.1-0.5 between unrelated lines, depending on the question), so a memory found
    /// by meaning alone has to be nearer to the question than that question's own background.
    pub fn background(&self, query: &[f32]) -> f32 {
        static UNRELATED_VECTORS: OnceLock<Vec<Vec<f32>>> = OnceLock::new();
        let vectors = UNRELATED_VECTORS.get_or_init(|| UNRELATED.iter().filter_map(|t| self.embed(t)).collect());
        if vectors.is_empty() {
            return 0.0;
        }
        let sum: f32 = vectors.iter().map(|v| dot(v, query)).sum();
        sum / vectors.len() as f32
    }
}

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
