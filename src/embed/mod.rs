//! A local semantic signal: texts as vectors from all-MiniLM-L6-v2 run in-process
//! ([`Encoder`], int8 weights embedded in the binary), so a question finds a memory that says the
//! same thing in other words, offline. `models/minilm-l6.bin` (written by
//! `tools/embed/export.py`) holds the model's WordPiece vocabulary, read here, then the encoder's
//! tensors; the tokenizer is [`tokenize`]. Vectors are stored as int8 with one scale ([`Code`]) plus their
//! signs ([`Bits`]) for a fast first pass over a whole bank.

pub mod tokenize;

use std::sync::OnceLock;

use crate::cut::floor_char;

pub use ovmem_encoder::Encoder;

/// The model file: see `tools/embed/export.py` (`write`) for the layout, with its matrices
/// packed for the multiply by the build script (`build.rs`).
static MODEL_FILE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/minilm-l6.packed.bin"));

/// Dimensions of a vector.
pub const DIMS: usize = ovmem_encoder::HIDDEN;
/// Bytes of a vector's signs.
pub const BITS: usize = DIMS / 8;
/// Tokens of a memory read at most (its beginning; the prompt comes first): the model was
/// trained on up to 128, and its cost grows with every one.
const MAX_TOKENS: usize = 128;
/// Tokens of a question read at most: the prompt hook encodes it while the agent waits.
const QUESTION_TOKENS: usize = 64;

/// Tokens of a passage at most: a few sentences, so that one fact is not averaged away.
const PASSAGE_TOKENS: usize = 48;
/// Passages of a memory embedded at most (besides its beginning), which bounds what a long
/// message costs to store and to search.
const MAX_PASSAGES: usize = 8;
/// Bytes of the user's text read for passages.
const PASSAGE_TEXT: usize = PASSAGE_TOKENS * MAX_PASSAGES * 8;

/// A question whose letters are more than this share Han, kana or hangul is asked by its words.
const CJK_UNREAD: f32 = 0.5;

/// Whether the model reads a text in these scripts at all (see [`CJK_UNREAD`]).
pub fn reads_script(text: &str) -> bool {
    crate::script::cjk_share(text) <= CJK_UNREAD
}

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

/// Readies the encoder on a thread of its own (its tensors found in the embedded model, their
/// first pages mapped) while the prompt hook still reads its input and its config, so that the
/// question is encoded as soon as it is known: 0.75 ms less per prompt at the median on this
/// machine. Mapping every page of the weights ahead (`MADV_POPULATE_READ`) cost more than it
/// saved, the word vectors being read a few rows at a time.
pub fn warm() {
    let _ = std::thread::Builder::new().name("warm".into()).spawn(|| encoder().vocab());
}

/// Question vectors being computed ahead ([`Model::prefetch`]): a question's, and those of the
/// events it relates when it relates several (each on a thread of its own).
struct Prefetch;

type Pending = Vec<(std::sync::Arc<str>, std::thread::JoinHandle<Option<Vec<f32>>>)>;

/// At most this many vectors are computed ahead at once (the question and its events); an older
/// one past it is left to finish unclaimed.
const AHEAD: usize = 4;

impl Prefetch {
    fn slot() -> &'static std::sync::Mutex<Pending> {
        static SLOT: std::sync::Mutex<Pending> = std::sync::Mutex::new(Vec::new());
        &SLOT
    }

    /// The prefetched vector of exactly this text (`None` when none was started for it, or its
    /// thread panicked: then it is computed here).
    fn take(text: &str) -> Option<Option<Vec<f32>>> {
        let mut slot = Self::slot().lock().unwrap_or_else(|e| e.into_inner());
        let i = slot.iter().position(|(t, _)| &**t == text)?;
        let (_, handle) = slot.remove(i);
        drop(slot);
        handle.join().ok()
    }

    /// Whether asking for this text's vector would not wait on a thread still computing it.
    fn ready(text: &str) -> bool {
        let slot = Self::slot().lock().unwrap_or_else(|e| e.into_inner());
        slot.iter().find(|(t, _)| &**t == text).is_none_or(|(_, handle)| handle.is_finished())
    }
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

    /// A memory's vectors: the first of its whole beginning (prompt, topic, reply, as
    /// [`Model::embed_parts`]), then one per passage of what the user said and of the reply, for
    /// each that says more than one passage holds ([`passages`]). A fact said in passing in a
    /// message about something else, or a decision in the middle of a long reply, is lost in the
    /// mean of the whole and found in its own sentences. Empty when no token of it is known.
    pub fn embed_memory(&self, prompt: &str, reply: &str, topic: &str) -> Vec<Vec<f32>> {
        let Some(head) = self.embed_parts(&[prompt, topic, reply]) else { return Vec::new() };
        let mut out = vec![head];
        for text in [prompt, reply] {
            let ids = self.tokenize(&text[..floor_char(text, PASSAGE_TEXT)]);
            let parts = passages(&ids, |id| self.ends_sentence(id));
            if parts.len() > 1 {
                out.extend(parts.iter().filter_map(|p| self.encode(p)));
            }
        }
        out
    }

    /// Whether a token ends a sentence (`.`, `!`, `?` and their CJK forms).
    fn ends_sentence(&self, id: u32) -> bool {
        matches!(self.token(id), "." | "!" | "?" | "。" | "！" | "？" | ";" | "；")
    }

    /// A question's vector, when it says something the model can read: mostly in other scripts
    /// than Han, kana and hangul, with at least two words it knows whole (a word that is one
    /// token of the vocabulary, letters only). A question that is
    /// an identifier, a code or a made-up word (`zqvorblinx7731`, `ERR_CONN_RESET`) is broken into
    /// sub-word pieces whose mean means nothing; it is asked by its words alone (`None`).
    pub fn question(&self, text: &str) -> Option<Vec<f32>> {
        if let Some(v) = Prefetch::take(text) {
            return v;
        }
        self.question_now(text)
    }

    /// Whether [`Model::question`] would answer at once: no thread is still computing this text's
    /// vector (asking computes it here when none was started). A recall reads ahead while not.
    pub fn question_ready(&self, text: &str) -> bool {
        Prefetch::ready(text)
    }

    /// Starts computing `text`'s question vector on a thread of its own, for [`Model::question`]
    /// to take when it asks for the same text: the prompt hook starts it as soon as it has the
    /// prompt, so that the model reads the question while the store is opened and searched by
    /// its words (the machine has a second core; encoding is most of a recall's time).
    pub fn prefetch(text: &str) {
        // A question the model does not read needs no thread: asking answers at once.
        if !reads_script(text) {
            return;
        }
        // One copy of the prompt, shared by the thread and the slot that names what it computes.
        let shared: std::sync::Arc<str> = text.into();
        let theirs = shared.clone();
        let spawned =
            std::thread::Builder::new().name("question".into()).spawn(move || Model::get().question_now(&theirs));
        if let Ok(handle) = spawned {
            let mut slot = Prefetch::slot().lock().unwrap_or_else(|e| e.into_inner());
            if slot.len() >= AHEAD {
                slot.remove(0);
            }
            slot.push((shared, handle));
        }
    }

    fn question_now(&self, text: &str) -> Option<Vec<f32>> {
        // Written mostly in Han, kana or hangul, a question is in scripts the model barely read in
        // training: its vector drew the ranking away from the words' (Chinese 77.8% by the words
        // alone against 61.1% fused, Japanese 66.7% against 62.5%, on the written dev histories).
        if !reads_script(text) {
            return None;
        }
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

/// Word-piece ids cut into passages of whole sentences, up to [`PASSAGE_TOKENS`] each (a longer
/// sentence is cut), at most [`MAX_PASSAGES`] of them; unknown tokens are left out.
pub fn passages(ids: &[u32], ends_sentence: impl Fn(u32) -> bool) -> Vec<Vec<u32>> {
    let mut out: Vec<Vec<u32>> = Vec::new();
    let mut sentence: Vec<u32> = Vec::new();
    let mut current: Vec<u32> = Vec::new();
    // A sentence joins the current passage while it fits, else starts the next one.
    fn place(sentence: &mut Vec<u32>, current: &mut Vec<u32>, out: &mut Vec<Vec<u32>>) {
        if current.len() + sentence.len() > PASSAGE_TOKENS && !current.is_empty() {
            out.push(std::mem::take(current));
        }
        for piece in sentence.chunks(PASSAGE_TOKENS) {
            if current.len() + piece.len() > PASSAGE_TOKENS {
                out.push(std::mem::take(current));
            }
            current.extend_from_slice(piece);
        }
        sentence.clear();
    }
    for &id in ids.iter().filter(|&&id| id != UNK) {
        sentence.push(id);
        if ends_sentence(id) {
            place(&mut sentence, &mut current, &mut out);
        }
    }
    place(&mut sentence, &mut current, &mut out);
    if !current.is_empty() {
        out.push(current);
    }
    out.truncate(MAX_PASSAGES);
    out
}

/// The beginning of a text that is read: no more than [`MAX_TOKENS`] tokens are.
fn head(s: &str) -> &str {
    &s[..floor_char(s, MAX_TOKENS * 12)]
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
        if bytes.len() != CODE_BYTES || query.len() != DIMS {
            return 0.0;
        }
        let scale = f32::from_le_bytes(bytes[..4].try_into().expect("4 bytes"));
        // Sixteen running sums, which the compiler keeps in vector lanes (one sum in order would
        // be a chain of dependent additions): a search scores hundreds of codes per question.
        let mut lanes = [0f32; 16];
        for (q, c) in query.chunks_exact(16).zip(bytes[4..].chunks_exact(16)) {
            for l in 0..16 {
                lanes[l] += q[l] * (c[l] as i8) as f32;
            }
        }
        lanes.iter().sum::<f32>() * scale
    }
}

/// The dot product of two vectors (their cosine, when both are unit vectors).
/// Summed in sixteen lanes, which the compiler keeps in vector registers (one sum in order is a
/// chain of dependent additions): the rerank compares hundreds of pairs of memories per question.
#[inline(always)]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let mut lanes = [0f32; 16];
    let (a16, b16) = (a[..n].chunks_exact(16), b[..n].chunks_exact(16));
    let tail: f32 = a16.remainder().iter().zip(b16.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in a16.zip(b16) {
        for l in 0..16 {
            lanes[l] += x[l] * y[l];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// A vector's signs, one bit per dimension: Hamming distance between two of them tracks the
/// angle between the vectors, for a first pass that reads 48 bytes per vector.
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

/// Bits where two sign vectors differ (inlined, so that a caller compiled for `popcnt` counts
/// in one instruction).
#[inline(always)]
pub fn hamming(a: &[u8], b: &[u8]) -> u32 {
    a.chunks_exact(8)
        .zip(b.chunks_exact(8))
        .map(|(x, y)| {
            (u64::from_le_bytes(x.try_into().expect("8 bytes")) ^ u64::from_le_bytes(y.try_into().expect("8 bytes")))
                .count_ones()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn dot_sums_every_pair_whatever_the_length() {
        for n in [0usize, 1, 15, 16, 17, 384, 390] {
            let a: Vec<f32> = (0..n).map(|i| (i % 7) as f32 - 3.0).collect();
            let b: Vec<f32> = (0..n).map(|i| (i % 5) as f32 * 0.5).collect();
            let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert_eq!(dot(&a, &b), plain, "n = {n}");
        }
        assert_eq!(dot(&[1.0; 20], &[2.0; 17]), 34.0, "the shorter length counts");
    }

    const DOT: u32 = 1012;

    #[test]
    fn sentences_are_packed_into_passages_and_a_long_one_is_cut() {
        let sentence = |n: u32, len: usize| -> Vec<u32> {
            let mut s = vec![2000 + n; len - 1];
            s.push(DOT);
            s
        };
        // Three 20-token sentences: two fit in a passage, the third starts the next.
        let ids: Vec<u32> = (0..3).flat_map(|n| sentence(n, 20)).collect();
        let got = passages(&ids, |id| id == DOT);
        assert_eq!(got.iter().map(Vec::len).collect::<Vec<_>>(), vec![40, 20]);
        assert_eq!(got[1][0], 2002, "a sentence is not split across passages when it fits in one");
        // A 100-token sentence is cut into pieces of at most PASSAGE_TOKENS.
        let got = passages(&sentence(7, 100), |id| id == DOT);
        assert_eq!(got.iter().map(Vec::len).collect::<Vec<_>>(), vec![48, 48, 4]);
        // Unknown tokens carry nothing.
        assert_eq!(passages(&[UNK, 5000, UNK], |_| false), vec![vec![5000]]);
        assert!(passages(&[], |_| false).is_empty());
    }

    #[test]
    fn a_fact_said_in_passing_gets_a_vector_of_its_own() {
        let m = Model::get();
        let prompt = "My monstera keeps dropping leaves and the new ones come out small and pale. I water it \
                      every Sunday with filtered water and it sits next to the east window. We're on the fourth \
                      floor, so there is plenty of light in the morning. Should I repot it or feed it?";
        let vs = m.embed_memory(prompt, "Try a balanced fertiliser once a month.", "");
        assert!(vs.len() > 2, "the head and at least two passages: {}", vs.len());
        let q = m.question("What level of the building do we live on?").unwrap();
        let head = dot(&q, &vs[0]);
        let best = vs[1..].iter().map(|v| dot(&q, v)).fold(f32::MIN, f32::max);
        assert!(best > head + 0.05, "the passage that says it is nearer than the whole: {best} vs {head}");
        // A short message is one passage: its head says it all.
        assert_eq!(m.embed_memory("Use Postgres for the queue.", "Done.", "").len(), 1);
        assert!(m.embed_memory("", "", "").is_empty());
    }

    #[test]
    fn a_word_written_against_an_emoji_is_still_read() {
        let m = Model::get();
        let words = |t: &str| m.tokenize(t).into_iter().map(|id| m.token(id)).collect::<Vec<_>>();
        assert_eq!(words("shipped✅"), ["shipped", "[UNK]"]);
        assert_eq!(words("🚀deploy to staging🔥🔥"), ["[UNK]", "deploy", "to", "staging", "[UNK]", "[UNK]"]);
        assert_eq!(words("👍🏽ok"), ["[UNK]", "[UNK]", "ok"], "a skin tone is a symbol of its own too");
        // Said with emoji against its words, a message means what it means without them.
        let plain = m.embed("the deploy finished and the billing service is healthy again").unwrap();
        let glued = m.embed("the deploy🚀 finished✅ and the billing service is healthy again🎉").unwrap();
        assert!(dot(&plain, &glued) > 0.95, "{}", dot(&plain, &glued));
    }

    #[test]
    fn a_question_the_model_does_not_read_starts_no_thread() {
        let cjk = "数据库的端口在哪里配置的？";
        Model::prefetch(cjk);
        assert!(Prefetch::slot().lock().unwrap().iter().all(|(t, _)| &**t != cjk), "no thread for it");
        assert!(Model::get().question_ready(cjk));
        assert_eq!(Model::get().question(cjk), None);
        // One the model reads is computed ahead, and taken once.
        let en = "Where is the database port configured?";
        Model::prefetch(en);
        assert!(Prefetch::slot().lock().unwrap().iter().any(|(t, _)| &**t == en));
        assert!(Model::get().question(en).is_some());
        assert!(Prefetch::slot().lock().unwrap().iter().all(|(t, _)| &**t != en), "taken");
    }

    proptest! {
        #[test]
        fn passages_keep_every_known_token_in_order_until_the_cap(
            ids in proptest::collection::vec(prop_oneof![Just(DOT), Just(UNK), 1000u32..1100], 0..600)
        ) {
            let got = passages(&ids, |id| id == DOT);
            prop_assert!(got.len() <= MAX_PASSAGES);
            prop_assert!(got.iter().all(|p| !p.is_empty() && p.len() <= PASSAGE_TOKENS));
            let known: Vec<u32> = ids.iter().copied().filter(|&id| id != UNK).collect();
            let flat: Vec<u32> = got.concat();
            prop_assert_eq!(&known[..flat.len()], &flat[..]);
            if got.len() < MAX_PASSAGES {
                prop_assert_eq!(flat.len(), known.len());
            }
        }
    }
}
