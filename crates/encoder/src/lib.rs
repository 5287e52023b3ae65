//! all-MiniLM-L6-v2 itself, run in-process: the six-layer BERT encoder on int8 weights (the
//! tensors of ovmem's `models/minilm-l6.bin`, written by `tools/embed/export.py` from the pinned
//! model), mean-pooled as the model was trained. A sentence's meaning as the model reads
//! it, word order and context included, where a static table only averages its tokens.
//!
//! Dense layers multiply in int8: the weights stay int8 as they lie in the binary (nothing is
//! unpacked at start), each row of activations is quantised with its own scale, and the dot
//! products are summed in i32 (AVX-512 VNNI or AVX2 where the CPU has them). A crate of its
//! own so that it is compiled optimised in debug and test builds too (Cargo.toml).

use std::sync::OnceLock;

/// Width of the model's hidden states (and of its sentence vectors).
pub const HIDDEN: usize = 384;
const HEADS: usize = 12;
const HEAD: usize = HIDDEN / HEADS;
const LAYERS: usize = 6;
/// Positions the model has embeddings for.
const POSITIONS: usize = 512;
const CLS: u32 = 101;
const SEP: u32 = 102;
const LN_EPS: f32 = 1e-12;

/// A matrix kept as int8 with one scale per row.
struct Rows {
    rows: usize,
    cols: usize,
    scales: Vec<f32>,
    q: &'static [i8],
}

impl Rows {
    fn row_into(&self, r: usize, out: &mut [f32]) {
        let s = self.scales[r];
        for (o, &q) in out.iter_mut().zip(&self.q[r * self.cols..(r + 1) * self.cols]) {
            *o = q as f32 * s;
        }
    }

    fn add_row(&self, r: usize, out: &mut [f32]) {
        let s = self.scales[r];
        for (o, &q) in out.iter_mut().zip(&self.q[r * self.cols..(r + 1) * self.cols]) {
            *o += q as f32 * s;
        }
    }
}

/// `y = x·Wᵀ + b`, W as [`Rows`] (one row per output).
struct Dense {
    w: Rows,
    b: Vec<f32>,
}

impl Dense {
    /// `x` holds `t` rows of `w.cols`; returns `t` rows of `w.rows`. Each row of `x` is
    /// quantised to int8 with its own scale (kept as i16 for the multiply), so the products are
    /// int8 dot products summed in i32.
    fn apply(&self, x: &[f32], t: usize) -> Vec<f32> {
        let (k, n) = (self.w.cols, self.w.rows);
        let mut xq = vec![0i16; t * k];
        let mut xs = vec![0f32; t];
        for ((row, q), s) in x.chunks_exact(k).zip(xq.chunks_exact_mut(k)).zip(&mut xs) {
            let max = row.iter().fold(0f32, |m, v| m.max(v.abs()));
            *s = if max > 0.0 { max / 127.0 } else { 1.0 };
            let inv = 1.0 / *s;
            for (o, v) in q.iter_mut().zip(row) {
                // Rounded half away from zero (`as` truncates; `round` is a libm call here).
                *o = (v * inv + 0.5f32.copysign(*v)) as i16;
            }
        }
        let mut acc = vec![0i32; t * n];
        products(&xq, self.w.q, k, &mut acc);
        let mut y = vec![0f32; t * n];
        for ((yr, ar), s) in y.chunks_exact_mut(n).zip(acc.chunks_exact(n)).zip(&xs) {
            for (((o, &a), ws), b) in yr.iter_mut().zip(ar).zip(&self.w.scales).zip(&self.b) {
                *o = a as f32 * s * ws + b;
            }
        }
        y
    }
}

/// `acc[i][r] = Σ x[i][j]·w[r][j]` for rows of `k` (x as i16 holding int8 values, w int8).
fn products(x: &[i16], w: &[i8], k: usize, acc: &mut [i32]) {
    #[cfg(target_arch = "x86_64")]
    {
        static SIMD: OnceLock<u8> = OnceLock::new();
        let simd = *SIMD.get_or_init(|| {
            if std::arch::is_x86_feature_detected!("avx512bw") && std::arch::is_x86_feature_detected!("avx512vnni") {
                2
            } else {
                std::arch::is_x86_feature_detected!("avx2") as u8
            }
        });
        if simd == 2 && k.is_multiple_of(32) {
            // SAFETY: the CPU has AVX-512 BW and VNNI (checked above); rows are whole 32-lane chunks.
            unsafe { products_vnni(x, w, k, acc) };
            return;
        }
        if simd >= 1 && k.is_multiple_of(16) {
            // SAFETY: the CPU has AVX2 (checked above) and rows are whole 16-lane chunks.
            unsafe { products_avx2(x, w, k, acc) };
            return;
        }
    }
    let n = w.len() / k;
    for (i, xr) in x.chunks_exact(k).enumerate() {
        for (r, wr) in w.chunks_exact(k).enumerate() {
            acc[i * n + r] = xr.iter().zip(wr).map(|(&a, &b)| a as i32 * b as i32).sum();
        }
    }
}

/// [`products`] with AVX-512 VNNI (`vpdpwssd`: 32 i16 products summed into i32 lanes in one
/// instruction), four rows of `x` per widened weight row.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn products_vnni(x: &[i16], w: &[i8], k: usize, acc: &mut [i32]) {
    use std::arch::x86_64::*;
    let (t, n) = (x.len() / k, w.len() / k);
    let xp = x.as_ptr();
    for r in 0..n {
        let wp = w.as_ptr().add(r * k);
        let mut i = 0;
        while i < t {
            let rows = (t - i).min(4);
            let mut a = [_mm512_setzero_si512(); 4];
            let mut j = 0;
            while j < k {
                let wv = _mm512_cvtepi8_epi16(_mm256_loadu_si256(wp.add(j).cast()));
                for (m, am) in a.iter_mut().enumerate().take(rows) {
                    *am = _mm512_dpwssd_epi32(*am, _mm512_loadu_si512(xp.add((i + m) * k + j).cast()), wv);
                }
                j += 32;
            }
            for (m, am) in a.iter().enumerate().take(rows) {
                acc[(i + m) * n + r] = _mm512_reduce_add_epi32(*am);
            }
            i += rows;
        }
    }
}

/// [`products`] with AVX2: each weight row is widened to i16 once per 16 lanes and multiplied
/// with four rows of `x` at a time (`vpmaddwd`: pairs of i16 products summed into i32 lanes).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn products_avx2(x: &[i16], w: &[i8], k: usize, acc: &mut [i32]) {
    use std::arch::x86_64::*;
    unsafe fn sum(v: __m256i) -> i32 {
        let s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0b01_00_11_10));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0b10_11_00_01));
        _mm_cvtsi128_si32(s)
    }
    let (t, n) = (x.len() / k, w.len() / k);
    let xp = x.as_ptr();
    for r in 0..n {
        let wp = w.as_ptr().add(r * k);
        let mut i = 0;
        while i + 4 <= t {
            let (mut a0, mut a1, mut a2, mut a3) =
                (_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256());
            let (x0, x1, x2, x3) = (xp.add(i * k), xp.add((i + 1) * k), xp.add((i + 2) * k), xp.add((i + 3) * k));
            let mut j = 0;
            while j < k {
                let wv = _mm256_cvtepi8_epi16(_mm_loadu_si128(wp.add(j).cast()));
                a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_loadu_si256(x0.add(j).cast()), wv));
                a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(_mm256_loadu_si256(x1.add(j).cast()), wv));
                a2 = _mm256_add_epi32(a2, _mm256_madd_epi16(_mm256_loadu_si256(x2.add(j).cast()), wv));
                a3 = _mm256_add_epi32(a3, _mm256_madd_epi16(_mm256_loadu_si256(x3.add(j).cast()), wv));
                j += 16;
            }
            acc[i * n + r] = sum(a0);
            acc[(i + 1) * n + r] = sum(a1);
            acc[(i + 2) * n + r] = sum(a2);
            acc[(i + 3) * n + r] = sum(a3);
            i += 4;
        }
        while i < t {
            let xi = xp.add(i * k);
            let mut a = _mm256_setzero_si256();
            let mut j = 0;
            while j < k {
                let wv = _mm256_cvtepi8_epi16(_mm_loadu_si128(wp.add(j).cast()));
                a = _mm256_add_epi32(a, _mm256_madd_epi16(_mm256_loadu_si256(xi.add(j).cast()), wv));
                j += 16;
            }
            acc[i * n + r] = sum(a);
            i += 1;
        }
    }
}

struct Norm {
    w: Vec<f32>,
    b: Vec<f32>,
}

impl Norm {
    fn apply(&self, x: &mut [f32]) {
        for row in x.chunks_exact_mut(HIDDEN) {
            let mean = row.iter().sum::<f32>() / HIDDEN as f32;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / HIDDEN as f32;
            let inv = 1.0 / (var + LN_EPS).sqrt();
            for ((v, w), b) in row.iter_mut().zip(&self.w).zip(&self.b) {
                *v = (*v - mean) * inv * w + b;
            }
        }
    }
}

struct Layer {
    q: Dense,
    k: Dense,
    v: Dense,
    out: Dense,
    norm1: Norm,
    up: Dense,
    down: Dense,
    norm2: Norm,
}

pub struct Encoder {
    word: Rows,
    position: Rows,
    token_type: Vec<f32>,
    norm: Norm,
    layers: Vec<Layer>,
}

/// The file's tensors by name, in order: see `tools/embed/export.py` (`write`).
struct Reader {
    b: &'static [u8],
    o: usize,
}

enum Tensor {
    F32(Vec<f32>),
    I8(Rows),
}

impl Reader {
    fn take(&mut self, n: usize) -> Option<&'static [u8]> {
        let s = self.b.get(self.o..self.o.checked_add(n)?)?;
        self.o += n;
        Some(s)
    }

    fn u32(&mut self) -> Option<usize> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?) as usize)
    }

    fn floats(&mut self, n: usize) -> Option<Vec<f32>> {
        let b = self.take(n.checked_mul(4)?)?;
        Some(b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes"))).collect())
    }

    fn tensor(&mut self, name: &str) -> Option<Tensor> {
        let len = *self.take(1)?.first()? as usize;
        if self.take(len)? != name.as_bytes() {
            return None;
        }
        let kind = *self.take(1)?.first()?;
        let (rows, cols) = (self.u32()?, self.u32()?);
        match kind {
            0 => Some(Tensor::F32(self.floats(rows.checked_mul(cols)?)?)),
            1 => {
                let scales = self.floats(rows)?;
                let q = self.take(rows.checked_mul(cols)?)?;
                // SAFETY: i8 and u8 have the same size and alignment.
                let q = unsafe { std::slice::from_raw_parts(q.as_ptr().cast::<i8>(), q.len()) };
                Some(Tensor::I8(Rows { rows, cols, scales, q }))
            }
            _ => None,
        }
    }

    fn f32s(&mut self, name: &str, len: usize) -> Option<Vec<f32>> {
        match self.tensor(name)? {
            Tensor::F32(v) if v.len() == len => Some(v),
            _ => None,
        }
    }

    fn rows(&mut self, name: &str, cols: usize) -> Option<Rows> {
        match self.tensor(name)? {
            Tensor::I8(r) if r.cols == cols => Some(r),
            _ => None,
        }
    }

    fn dense(&mut self, name: &str, inputs: usize, outputs: usize) -> Option<Dense> {
        let w = self.rows(&format!("{name}.weight"), inputs)?;
        let b = self.f32s(&format!("{name}.bias"), outputs)?;
        (w.rows == outputs).then_some(Dense { w, b })
    }

    fn norm(&mut self, name: &str) -> Option<Norm> {
        Some(Norm { w: self.f32s(&format!("{name}.weight"), HIDDEN)?, b: self.f32s(&format!("{name}.bias"), HIDDEN)? })
    }
}

impl Encoder {
    /// The encoder in a model file (`tools/embed/export.py`), from offset `o` (past the
    /// vocabulary) to its end; `None` when it is not that model. The scales and small vectors are
    /// copied out, the int8 matrices are used where they lie.
    pub fn parse(b: &'static [u8], o: usize) -> Option<Encoder> {
        let mut r = Reader { b, o };
        let _count = r.u32()?;
        let word = r.rows("embeddings.word_embeddings.weight", HIDDEN)?;
        let position = r.rows("embeddings.position_embeddings.weight", HIDDEN)?;
        if position.rows < POSITIONS {
            return None;
        }
        let token_type = r.f32s("embeddings.token_type_embeddings.weight", 2 * HIDDEN)?;
        let norm = r.norm("embeddings.LayerNorm")?;
        let mut layers = Vec::with_capacity(LAYERS);
        for i in 0..LAYERS {
            let p = format!("encoder.layer.{i}.");
            let inter = 4 * HIDDEN;
            layers.push(Layer {
                q: r.dense(&format!("{p}attention.self.query"), HIDDEN, HIDDEN)?,
                k: r.dense(&format!("{p}attention.self.key"), HIDDEN, HIDDEN)?,
                v: r.dense(&format!("{p}attention.self.value"), HIDDEN, HIDDEN)?,
                out: r.dense(&format!("{p}attention.output.dense"), HIDDEN, HIDDEN)?,
                up: r.dense(&format!("{p}intermediate.dense"), HIDDEN, inter)?,
                down: r.dense(&format!("{p}output.dense"), inter, HIDDEN)?,
                norm1: r.norm(&format!("{p}attention.output.LayerNorm"))?,
                norm2: r.norm(&format!("{p}output.LayerNorm"))?,
            });
        }
        (r.o == b.len()).then_some(Encoder { word, position, token_type, norm, layers })
    }

    /// The vocabulary's size.
    pub fn vocab(&self) -> usize {
        self.word.rows
    }

    /// The mean-pooled, unit-length output for word-piece ids (without `[CLS]`/`[SEP]`, which
    /// are added; at most `POSITIONS - 2` of them are read).
    pub fn encode(&self, ids: &[u32]) -> Vec<f32> {
        let ids: Vec<u32> = std::iter::once(CLS)
            .chain(ids.iter().copied().filter(|&i| (i as usize) < self.word.rows).take(POSITIONS - 2))
            .chain(std::iter::once(SEP))
            .collect();
        let t = ids.len();
        let mut x = vec![0f32; t * HIDDEN];
        for (p, (row, &id)) in x.chunks_exact_mut(HIDDEN).zip(&ids).enumerate() {
            self.word.row_into(id as usize, row);
            self.position.add_row(p, row);
            for (v, tt) in row.iter_mut().zip(&self.token_type[..HIDDEN]) {
                *v += tt;
            }
        }
        self.norm.apply(&mut x);
        for layer in &self.layers {
            let q = layer.q.apply(&x, t);
            let k = layer.k.apply(&x, t);
            let v = layer.v.apply(&x, t);
            let ctx = attention(&q, &k, &v, t);
            let mut h = layer.out.apply(&ctx, t);
            for (a, b) in h.iter_mut().zip(&x) {
                *a += b;
            }
            layer.norm1.apply(&mut h);
            let mut up = layer.up.apply(&h, t);
            for u in &mut up {
                *u = gelu(*u);
            }
            let mut out = layer.down.apply(&up, t);
            for (a, b) in out.iter_mut().zip(&h) {
                *a += b;
            }
            layer.norm2.apply(&mut out);
            x = out;
        }
        let mut pooled = vec![0f32; HIDDEN];
        for row in x.chunks_exact(HIDDEN) {
            for (p, v) in pooled.iter_mut().zip(row) {
                *p += v;
            }
        }
        let norm = pooled.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
        pooled.iter_mut().for_each(|v| *v /= norm);
        pooled
    }
}

/// Multi-head self-attention over one sequence of `t` positions (no padding).
fn attention(q: &[f32], k: &[f32], v: &[f32], t: usize) -> Vec<f32> {
    let mut ctx = vec![0f32; t * HIDDEN];
    let scale = 1.0 / (HEAD as f32).sqrt();
    let mut scores = vec![0f32; t];
    for h in 0..HEADS {
        let o = h * HEAD;
        for i in 0..t {
            let qi = &q[i * HIDDEN + o..i * HIDDEN + o + HEAD];
            let mut max = f32::NEG_INFINITY;
            for (j, s) in scores.iter_mut().enumerate() {
                let kj = &k[j * HIDDEN + o..j * HIDDEN + o + HEAD];
                *s = dot32(qi, kj) * scale;
                max = max.max(*s);
            }
            let mut sum = 0.0;
            for s in scores.iter_mut() {
                *s = (*s - max).exp();
                sum += *s;
            }
            let out = &mut ctx[i * HIDDEN + o..i * HIDDEN + o + HEAD];
            for (j, s) in scores.iter().enumerate() {
                let w = s / sum;
                for (c, vj) in out.iter_mut().zip(&v[j * HIDDEN + o..j * HIDDEN + o + HEAD]) {
                    *c += w * vj;
                }
            }
        }
    }
    ctx
}

/// The dot product of two head-wide vectors, in eight independent lanes (so it vectorises).
#[inline(always)]
fn dot32(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        for j in 0..8 {
            lanes[j] += x[j] * y[j];
        }
    }
    lanes.iter().sum()
}

/// GELU as BERT computes it, `x·Φ(x)` with the exact normal CDF.
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x / std::f32::consts::SQRT_2))
}

/// The error function (Abramowitz & Stegun 7.1.26, |error| < 1.5e-7).
fn erf(x: f32) -> f32 {
    let s = x.signum();
    let x = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let y = 1.0
        - (((((1.061_405_4 * t - 1.453_152_1) * t) + 1.421_413_8) * t - 0.284_496_74) * t + 0.254_829_6)
            * t
            * (-x * x).exp();
    s * y
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SIMD paths give the plain products exactly, for any number of rows.
    #[test]
    fn products_match_the_plain_sums() {
        let k = 64;
        let w: Vec<i8> = (0..k * 5).map(|v| ((v * 37 + 11) % 255) as i8).collect();
        for t in [1, 3, 4, 5, 8, 9, 13, 16, 17] {
            let x: Vec<i16> = (0..k * t).map(|v| ((v * 53 + 7) % 255) as i16 - 127).collect();
            let mut got = vec![0; t * 5];
            products(&x, &w, k, &mut got);
            let want: Vec<i32> = x
                .chunks_exact(k)
                .flat_map(|xr| {
                    w.chunks_exact(k).map(move |wr| xr.iter().zip(wr).map(|(&a, &b)| a as i32 * b as i32).sum())
                })
                .collect();
            assert_eq!(got, want, "{t} rows");
        }
    }
}
