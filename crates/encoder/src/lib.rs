//! all-MiniLM-L6-v2 itself, run in-process: the six-layer BERT encoder on int8 weights (the
//! tensors of ovmem's `models/minilm-l6.bin`, written by `tools/embed/export.py` from the pinned
//! model), mean-pooled as the model was trained. A sentence's meaning as the model reads
//! it, word order and context included, where a static table only averages its tokens.
//!
//! Dense layers multiply in int8: the weights stay int8 as they lie in the binary (packed for
//! the multiply at build time by ovmem's `build.rs`; nothing is unpacked at start), each row of
//! activations is quantised with its own scale, and the dot products are summed in i32 (AVX-512
//! VNNI, AVX-VNNI or AVX2 where the CPU has them; `sdot` or NEON on 64-bit ARM). A crate of its
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

/// Outputs per block of a [`Packed`] matrix: one AVX-512 register of i32 sums.
const BLOCK: usize = 16;
/// Inputs per group: the four int8 products one `vpdpbusd` lane sums.
const GROUP: usize = 4;

/// A dense layer's int8 matrix (`rows` outputs of `cols` inputs, one scale per output row),
/// packed for int8 dot products: blocks of [`BLOCK`] outputs, and within a block, for each
/// [`GROUP`] of inputs, the group's weights of each of the block's outputs side by side (64
/// bytes). A product then multiplies four inputs, broadcast, with sixteen outputs' weights in one
/// instruction, and every output's sum stays in its own lane (no horizontal sums). `sums` holds
/// each row's sum of weights (for the unsigned-input form of `vpdpbusd`). Packed at build time
/// from the model file's row-major matrices (ovmem's `build.rs`, tensor kind 2).
struct Packed {
    rows: usize,
    cols: usize,
    scales: Vec<f32>,
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    sums: Vec<i32>,
    q: &'static [i8],
}

/// `y = x·Wᵀ + b`.
struct Dense {
    w: Packed,
    b: Vec<f32>,
}

impl Dense {
    /// `x` holds `t` rows of `w.cols`; returns `t` rows of `w.rows`. Each row of `x` is
    /// quantised to int8 with its own scale, so the products are int8 dot products summed in i32
    /// (exactly: the result does not depend on the instructions used).
    fn apply(&self, x: &[f32], t: usize) -> Vec<f32> {
        let (k, n) = (self.w.cols, self.w.rows);
        let mut xq = vec![0i8; t * k];
        let mut xs = vec![0f32; t];
        for ((row, q), s) in x.chunks_exact(k).zip(xq.chunks_exact_mut(k)).zip(&mut xs) {
            *s = quantise(row, q);
        }
        let mut acc = vec![0i32; t * n];
        products(&xq, &self.w, &mut acc);
        let mut y = vec![0f32; t * n];
        for ((yr, ar), s) in y.chunks_exact_mut(n).zip(acc.chunks_exact(n)).zip(&xs) {
            for (((o, &a), ws), b) in yr.iter_mut().zip(ar).zip(&self.w.scales).zip(&self.b) {
                *o = a as f32 * s * ws + b;
            }
        }
        y
    }
}

/// The widest instructions this CPU has that the encoder uses.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Simd {
    /// AVX-512 with BW and VNNI: sixteen lanes, int8 dot products in one instruction.
    Avx512Vnni,
    /// AVX2 with AVX-VNNI (Intel's cores since 2021): eight lanes, the same dot products.
    AvxVnni,
    /// AVX2 alone.
    Avx2,
    Plain,
}

#[cfg(target_arch = "x86_64")]
fn simd() -> Simd {
    static SIMD: OnceLock<Simd> = OnceLock::new();
    *SIMD.get_or_init(|| {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx512bw") && has!("avx512vnni") {
            Simd::Avx512Vnni
        } else if has!("avx2") && has!("avxvnni") {
            Simd::AvxVnni
        } else if has!("avx2") {
            Simd::Avx2
        } else {
            Simd::Plain
        }
    })
}

/// A row of activations as int8 (`q`) times the scale it returns: its largest magnitude maps
/// to 127, each value rounded half away from zero.
fn quantise(row: &[f32], q: &mut [i8]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    match simd() {
        // SAFETY: the CPU has AVX-512 (checked by `simd`).
        Simd::Avx512Vnni => return unsafe { quantise_avx512(row, q) },
        // SAFETY: the CPU has AVX2 (checked by `simd`).
        Simd::AvxVnni | Simd::Avx2 => return unsafe { quantise_avx2(row, q) },
        Simd::Plain => {}
    }
    quantise_plain(row, q)
}

#[inline(always)]
fn quantise_plain(row: &[f32], q: &mut [i8]) -> f32 {
    let max = row.iter().fold(0f32, |m, v| m.max(v.abs()));
    let s = if max > 0.0 { max / 127.0 } else { 1.0 };
    quantise_tail(row, q, 1.0 / s);
    s
}

/// [`quantise`]'s rounding. Rounded half away from zero (`as` truncates; `round` is a libm call
/// here); through `i32`, which is what vectorises, and the same for every input.
#[inline(always)]
fn quantise_tail(row: &[f32], q: &mut [i8], inv: f32) {
    for (o, v) in q.iter_mut().zip(row) {
        *o = (v * inv + 0.5f32.copysign(*v)).clamp(-127.0, 127.0) as i32 as i8;
    }
}

/// [`quantise_plain`] compiled for AVX2's eight lanes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn quantise_avx2(row: &[f32], q: &mut [i8]) -> f32 {
    quantise_plain(row, q)
}

/// [`quantise`] sixteen values at a time, with the same operations in the same order (the same
/// bytes, for any input that is a number).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn quantise_avx512(row: &[f32], q: &mut [i8]) -> f32 {
    use std::arch::x86_64::*;
    let whole = row.len() / 16 * 16;
    let mut m = _mm512_setzero_ps();
    for c in (0..whole).step_by(16) {
        m = _mm512_max_ps(m, _mm512_abs_ps(_mm512_loadu_ps(row.as_ptr().add(c))));
    }
    let max = row[whole..].iter().fold(_mm512_reduce_max_ps(m), |m, v| m.max(v.abs()));
    let s = if max > 0.0 { max / 127.0 } else { 1.0 };
    let inv = 1.0 / s;
    let (vinv, half, sign) =
        (_mm512_set1_ps(inv), _mm512_set1_epi32(0.5f32.to_bits() as i32), _mm512_set1_epi32(i32::MIN));
    let (lo, hi) = (_mm512_set1_ps(-127.0), _mm512_set1_ps(127.0));
    for c in (0..whole).step_by(16) {
        let v = _mm512_loadu_ps(row.as_ptr().add(c));
        let h = _mm512_castsi512_ps(_mm512_or_si512(half, _mm512_and_si512(_mm512_castps_si512(v), sign)));
        let u = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(_mm512_mul_ps(v, vinv), h), lo), hi);
        _mm_storeu_si128(q.as_mut_ptr().add(c).cast(), _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(u)));
    }
    quantise_tail(&row[whole..], &mut q[whole..], inv);
    s
}

/// `acc[i][r] = Σ x[i][j]·w[r][j]` for `t` rows of `x` (int8 in -127..=127) and the packed `w`.
fn products(x: &[i8], w: &Packed, acc: &mut [i32]) {
    // SAFETY (each): the CPU has these instructions (checked by `simd` on x86-64, by `DOTPROD`
    // on aarch64, where NEON is always there); `Packed` holds whole blocks.
    #[cfg(target_arch = "x86_64")]
    match simd() {
        Simd::Avx512Vnni => return unsafe { products_vnni(x, w, acc) },
        Simd::AvxVnni => return unsafe { products_avxvnni(x, w, acc) },
        Simd::Avx2 => return unsafe { products_avx2(x, w, acc) },
        Simd::Plain => {}
    }
    #[cfg(target_arch = "aarch64")]
    {
        static DOTPROD: OnceLock<bool> = OnceLock::new();
        if *DOTPROD.get_or_init(|| std::arch::is_aarch64_feature_detected!("dotprod")) {
            return unsafe { arm::products_sdot(x, w, acc) };
        }
        // NEON is part of every aarch64 CPU.
        return unsafe { arm::products_neon(x, w, acc) };
    }
    #[allow(unreachable_code)]
    products_plain(x, w, acc)
}

fn products_plain(x: &[i8], w: &Packed, acc: &mut [i32]) {
    let (k, n) = (w.cols, w.rows);
    for (xr, ar) in x.chunks_exact(k).zip(acc.chunks_exact_mut(n)) {
        for (block, out) in w.q.chunks_exact(BLOCK * k).zip(ar.chunks_exact_mut(BLOCK)) {
            let mut lanes = [0i32; BLOCK];
            for (group, xg) in block.chunks_exact(BLOCK * GROUP).zip(xr.chunks_exact(GROUP)) {
                for (lane, wg) in lanes.iter_mut().zip(group.chunks_exact(GROUP)) {
                    *lane += wg.iter().zip(xg).map(|(&a, &b)| a as i32 * b as i32).sum::<i32>();
                }
            }
            out.copy_from_slice(&lanes);
        }
    }
}

/// Calls `tile::<R>(xu, i, w, acc)` (or `tile::<R, G>` for `tile[G](…)`) with the constant `R`
/// equal to the row count `rows`, one of those listed or else 1.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
macro_rules! by_rows {
    ($rows:expr, $tile:ident($xu:expr, $i:expr, $w:expr, $acc:expr); $($r:literal)*) => {
        match $rows {
            $($r => $tile::<$r>($xu, $i, $w, $acc),)*
            _ => $tile::<1>($xu, $i, $w, $acc),
        }
    };
    ($rows:expr, $tile:ident[$g:ty]($xu:expr, $i:expr, $w:expr, $acc:expr); $($r:literal)*) => {
        match $rows {
            $($r => $tile::<$r, $g>($xu, $i, $w, $acc),)*
            _ => $tile::<1, $g>($xu, $i, $w, $acc),
        }
    };
}

/// [`products`] with AVX-512 VNNI: `vpdpbusd` multiplies four unsigned bytes with four signed
/// ones and sums them into each i32 lane, sixteen outputs at once. The inputs are made unsigned
/// by adding 128 (`x ^ 0x80`), taken back out as 128 times each row's sum of weights. Up to
/// sixteen rows of `x` share each load of weights ([`tile_vnni`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn products_vnni(x: &[i8], w: &Packed, acc: &mut [i32]) {
    let k = w.cols;
    let t = x.len() / k;
    let xu = unsigned_groups(x);
    let mut i = 0;
    while i < t {
        let rows = (t - i).min(16);
        // A tile's row count is a constant, so that its sums stay in registers (sixteen of the
        // thirty-two), and a question's rows (most are under sixteen tokens) are one tile: the
        // weights, larger than the core's cache, are read once per tile.
        by_rows!(rows, tile_vnni(&xu, i, w, acc); 16 15 14 13 12 11 10 9 8 7 6 5 4 3 2);
        i += rows;
    }
}

/// Rows `i..i + R` of [`products_vnni`], every block of outputs: each load of a block's weights
/// serves the `R` rows, whose sums are `R` registers.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn tile_vnni<const R: usize>(xu: &[u32], i: usize, w: &Packed, acc: &mut [i32]) {
    use std::arch::x86_64::*;
    let (k, n) = (w.cols, w.rows);
    let groups = k / GROUP;
    let xp = xu.as_ptr().add(i * groups);
    for b in 0..n / BLOCK {
        let wp = w.q.as_ptr().add(b * BLOCK * k);
        let offset = _mm512_slli_epi32::<7>(_mm512_loadu_si512(w.sums.as_ptr().add(b * BLOCK).cast()));
        let mut a = [_mm512_setzero_si512(); R];
        for g in 0..groups {
            let wv = _mm512_loadu_si512(wp.add(g * BLOCK * GROUP).cast());
            for (m, am) in a.iter_mut().enumerate() {
                let xv = _mm512_set1_epi32(*xp.add(m * groups + g) as i32);
                *am = _mm512_dpbusd_epi32(*am, xv, wv);
            }
        }
        for (m, am) in a.iter().enumerate() {
            _mm512_storeu_si512(acc.as_mut_ptr().add((i + m) * n + b * BLOCK).cast(), _mm512_sub_epi32(*am, offset));
        }
    }
}

/// The inputs as unsigned bytes (`x ^ 0x80`, that is x + 128), one u32 per group of four, for
/// the unsigned-by-signed dot products of VNNI.
#[cfg(target_arch = "x86_64")]
fn unsigned_groups(x: &[i8]) -> Vec<u32> {
    x.chunks_exact(GROUP)
        .map(|g| u32::from_le_bytes([g[0] as u8 ^ 0x80, g[1] as u8 ^ 0x80, g[2] as u8 ^ 0x80, g[3] as u8 ^ 0x80]))
        .collect()
}

/// [`products_vnni`] with AVX-VNNI's eight lanes: a block's sixteen outputs are two registers,
/// and up to six rows share each load of weights (twelve sums of the sixteen registers).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avxvnni")]
unsafe fn products_avxvnni(x: &[i8], w: &Packed, acc: &mut [i32]) {
    let t = x.len() / w.cols;
    let xu = unsigned_groups(x);
    let mut i = 0;
    while i < t {
        let rows = (t - i).min(6);
        by_rows!(rows, tile_avxvnni(&xu, i, w, acc); 6 5 4 3 2);
        i += rows;
    }
}

/// Rows `i..i + R` of [`products_avxvnni`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avxvnni")]
unsafe fn tile_avxvnni<const R: usize>(xu: &[u32], i: usize, w: &Packed, acc: &mut [i32]) {
    use std::arch::x86_64::*;
    let (k, n) = (w.cols, w.rows);
    let groups = k / GROUP;
    let xp = xu.as_ptr().add(i * groups);
    for b in 0..n / BLOCK {
        let wp = w.q.as_ptr().add(b * BLOCK * k);
        let sums = w.sums.as_ptr().add(b * BLOCK);
        let offset = [
            _mm256_slli_epi32::<7>(_mm256_loadu_si256(sums.cast())),
            _mm256_slli_epi32::<7>(_mm256_loadu_si256(sums.add(8).cast())),
        ];
        let mut a = [[_mm256_setzero_si256(); 2]; R];
        for g in 0..groups {
            let w0 = _mm256_loadu_si256(wp.add(g * BLOCK * GROUP).cast());
            let w1 = _mm256_loadu_si256(wp.add(g * BLOCK * GROUP + 32).cast());
            for (m, am) in a.iter_mut().enumerate() {
                let xv = _mm256_set1_epi32(*xp.add(m * groups + g) as i32);
                am[0] = _mm256_dpbusd_avx_epi32(am[0], xv, w0);
                am[1] = _mm256_dpbusd_avx_epi32(am[1], xv, w1);
            }
        }
        for (m, am) in a.iter().enumerate() {
            let out = acc.as_mut_ptr().add((i + m) * n + b * BLOCK);
            _mm256_storeu_si256(out.cast(), _mm256_sub_epi32(am[0], offset[0]));
            _mm256_storeu_si256(out.add(8).cast(), _mm256_sub_epi32(am[1], offset[1]));
        }
    }
}

/// [`products`] with AVX2: per group of four inputs, `vpmaddubsw` multiplies their magnitudes
/// with the weights (sign moved onto them) in pairs, `vpmaddwd` sums the pairs into i32 lanes,
/// eight outputs per register (no overflow: 2·127·127 fits in i16).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn products_avx2(x: &[i8], w: &Packed, acc: &mut [i32]) {
    use std::arch::x86_64::*;
    let (k, n) = (w.cols, w.rows);
    let t = x.len() / k;
    let groups = k / GROUP;
    let ones = _mm256_set1_epi16(1);
    let xp = x.as_ptr().cast::<i32>();
    for b in 0..n / BLOCK {
        let wp = w.q.as_ptr().add(b * BLOCK * k);
        for i in 0..t {
            let (mut lo, mut hi) = (_mm256_setzero_si256(), _mm256_setzero_si256());
            for g in 0..groups {
                let xv = _mm256_set1_epi32(xp.add(i * groups + g).read_unaligned());
                let ax = _mm256_abs_epi8(xv);
                let w0 = _mm256_loadu_si256(wp.add(g * BLOCK * GROUP).cast());
                let w1 = _mm256_loadu_si256(wp.add(g * BLOCK * GROUP + 32).cast());
                let p0 = _mm256_maddubs_epi16(ax, _mm256_sign_epi8(w0, xv));
                let p1 = _mm256_maddubs_epi16(ax, _mm256_sign_epi8(w1, xv));
                lo = _mm256_add_epi32(lo, _mm256_madd_epi16(p0, ones));
                hi = _mm256_add_epi32(hi, _mm256_madd_epi16(p1, ones));
            }
            let out = acc.as_mut_ptr().add(i * n + b * BLOCK);
            _mm256_storeu_si256(out.cast(), lo);
            _mm256_storeu_si256(out.add(8).cast(), hi);
        }
    }
}

/// [`products`] on 64-bit ARM (Apple's M-series, Graviton, Ampere, recent phones' cores), whose
/// int8 dot products fit the [`Packed`] layout as they are: a group's sixteen outputs are four
/// registers of four outputs' four weights, and `sdot` sums each output's four products with the
/// group of inputs (broadcast) into its own lane.
#[cfg(target_arch = "aarch64")]
mod arm {
    use std::arch::aarch64::*;

    use super::{Packed, BLOCK, GROUP};

    /// Rows of `x` that share each load of weights: their sums take 4·R of the 32 registers.
    const ROWS: usize = 6;

    /// With `sdot` (the dot-product extension, ARMv8.2 and later: every Apple M-series core,
    /// Graviton 2 and later).
    #[target_feature(enable = "neon,dotprod")]
    pub(super) unsafe fn products_sdot(x: &[i8], w: &Packed, acc: &mut [i32]) {
        products_by::<Sdot>(x, w, acc)
    }

    /// With NEON alone (ARMv8.0: Raspberry Pi 4, older Cortex-A cores).
    #[target_feature(enable = "neon")]
    pub(super) unsafe fn products_neon(x: &[i8], w: &Packed, acc: &mut [i32]) {
        products_by::<Neon>(x, w, acc)
    }

    /// How four outputs' sums (`s`, one a lane) take in their four weights each (`w`) times the
    /// group's four inputs (`x`, the same four bytes in every lane).
    trait Step {
        unsafe fn step(s: int32x4_t, w: int8x16_t, x: int8x16_t) -> int32x4_t;
    }

    /// `sdot`, written as assembly: its intrinsic is not stable in Rust yet. Only ever inlined
    /// into [`products_sdot`], whose CPU has it.
    struct Sdot;

    impl Step for Sdot {
        #[inline(always)]
        unsafe fn step(mut s: int32x4_t, w: int8x16_t, x: int8x16_t) -> int32x4_t {
            std::arch::asm!(
                "sdot {s:v}.4s, {w:v}.16b, {x:v}.16b",
                s = inout(vreg) s,
                w = in(vreg) w,
                x = in(vreg) x,
                options(pure, nomem, nostack, preserves_flags),
            );
            s
        }
    }

    /// The products widened to i16 (`smull`), added in pairs (at most 2·127·127, which fits),
    /// and the pairs into the i32 sums (`sadalp`).
    struct Neon;

    impl Step for Neon {
        #[inline(always)]
        unsafe fn step(s: int32x4_t, w: int8x16_t, x: int8x16_t) -> int32x4_t {
            let lo = vmull_s8(vget_low_s8(w), vget_low_s8(x));
            let hi = vmull_high_s8(w, x);
            vpadalq_s16(s, vpaddq_s16(lo, hi))
        }
    }

    #[inline(always)]
    unsafe fn products_by<S: Step>(x: &[i8], w: &Packed, acc: &mut [i32]) {
        let t = x.len() / w.cols;
        let mut i = 0;
        while i < t {
            let rows = (t - i).min(ROWS);
            by_rows!(rows, tile[S](x, i, w, acc); 6 5 4 3 2);
            i += rows;
        }
    }

    /// Rows `i..i + R` of `x`, every block of outputs: each load of a block's weights serves
    /// the `R` rows, whose sums are 4·`R` registers.
    #[inline(always)]
    unsafe fn tile<const R: usize, S: Step>(x: &[i8], i: usize, w: &Packed, acc: &mut [i32]) {
        let (k, n) = (w.cols, w.rows);
        let groups = k / GROUP;
        let xp = x.as_ptr().add(i * k).cast::<i32>();
        for b in 0..n / BLOCK {
            let wp = w.q.as_ptr().add(b * BLOCK * k);
            let mut a = [[vdupq_n_s32(0); 4]; R];
            for g in 0..groups {
                let wg = wp.add(g * BLOCK * GROUP);
                let wv = [vld1q_s8(wg), vld1q_s8(wg.add(16)), vld1q_s8(wg.add(32)), vld1q_s8(wg.add(48))];
                for (m, am) in a.iter_mut().enumerate() {
                    let xv = vreinterpretq_s8_s32(vdupq_n_s32(xp.add(m * groups + g).read_unaligned()));
                    for (s, &wq) in am.iter_mut().zip(&wv) {
                        *s = S::step(*s, wq, xv);
                    }
                }
            }
            store(acc, i, n, b, &a);
        }
    }

    /// Rows `i..i + R`' sums of block `b` (sixteen outputs, four registers a row) into `acc`.
    #[target_feature(enable = "neon")]
    unsafe fn store<const R: usize>(acc: &mut [i32], i: usize, n: usize, b: usize, a: &[[int32x4_t; 4]; R]) {
        for (m, am) in a.iter().enumerate() {
            let out = acc.as_mut_ptr().add((i + m) * n + b * BLOCK);
            for (q, &s) in am.iter().enumerate() {
                vst1q_s32(out.add(4 * q), s);
            }
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
    Packed(Packed),
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
            2 => {
                let scales = self.floats(rows)?;
                let sums = self.take(rows.checked_mul(4)?)?;
                let sums = sums.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().expect("4 bytes"))).collect();
                let q = self.take(rows.checked_mul(cols)?)?;
                if !rows.is_multiple_of(BLOCK) || !cols.is_multiple_of(GROUP) {
                    return None;
                }
                // SAFETY: i8 and u8 have the same size and alignment.
                let q = unsafe { std::slice::from_raw_parts(q.as_ptr().cast::<i8>(), q.len()) };
                Some(Tensor::Packed(Packed { rows, cols, scales, sums, q }))
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
        let Tensor::Packed(w) = self.tensor(&format!("{name}.weight"))? else { return None };
        if w.cols != inputs {
            return None;
        }
        let b = self.f32s(&format!("{name}.bias"), outputs)?;
        (w.rows == outputs).then_some(Dense { w, b })
    }

    fn norm(&mut self, name: &str) -> Option<Norm> {
        Some(Norm { w: self.f32s(&format!("{name}.weight"), HIDDEN)?, b: self.f32s(&format!("{name}.bias"), HIDDEN)? })
    }
}

impl Encoder {
    /// The encoder in a model file (`tools/embed/export.py`) as ovmem's `build.rs` packed it, from offset
    /// `o` (past the vocabulary) to its end; `None` when it is not that model. The scales and
    /// small vectors are copied out, the int8 matrices are used where they lie.
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
            gelu_all(&mut up);
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
    #[cfg(target_arch = "x86_64")]
    match simd() {
        // SAFETY: the CPU has AVX-512 (checked by `simd`).
        Simd::Avx512Vnni => return unsafe { attention_avx512(q, k, v, t) },
        // SAFETY: the CPU has AVX2 (checked by `simd`).
        Simd::AvxVnni | Simd::Avx2 => return unsafe { attention_avx2(q, k, v, t) },
        Simd::Plain => {}
    }
    attention_plain(q, k, v, t)
}

/// [`attention_plain`] compiled for AVX-512's sixteen lanes (the same bits: lane by lane, the
/// same operations in the same order).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn attention_avx512(q: &[f32], k: &[f32], v: &[f32], t: usize) -> Vec<f32> {
    attention_plain(q, k, v, t)
}

/// [`attention_plain`] compiled for AVX2's eight lanes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn attention_avx2(q: &[f32], k: &[f32], v: &[f32], t: usize) -> Vec<f32> {
    attention_plain(q, k, v, t)
}

/// [`attention`], the softmax's `exp` as [`exp_neg`] (its argument is never above zero), so that
/// a memory's 200,000 of them per layer vectorise instead of each being a call.
#[inline(always)]
fn attention_plain(q: &[f32], k: &[f32], v: &[f32], t: usize) -> Vec<f32> {
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
            for s in scores.iter_mut() {
                *s = exp_neg(*s - max);
            }
            let sum: f32 = scores.iter().sum();
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

/// [`gelu`] of every value: the encoder takes it of 1,536 values per token per layer, and a call
/// to `exp` each was a fifth of a question's time. Written once in plain arithmetic
/// ([`gelu`], [`exp_neg`]) and compiled for the widest vectors the CPU has (sixteen or eight
/// lanes), which give the same bits as one value at a time: Rust neither fuses nor reorders
/// float operations.
fn gelu_all(xs: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    match simd() {
        // SAFETY: the CPU has AVX-512 (checked by `simd`).
        Simd::Avx512Vnni => return unsafe { gelu_avx512(xs) },
        // SAFETY: the CPU has AVX2 (checked by `simd`).
        Simd::AvxVnni | Simd::Avx2 => return unsafe { gelu_avx2(xs) },
        Simd::Plain => {}
    }
    xs.iter_mut().for_each(|x| *x = gelu(*x));
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn gelu_avx512(xs: &mut [f32]) {
    xs.iter_mut().for_each(|x| *x = gelu(*x));
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn gelu_avx2(xs: &mut [f32]) {
    xs.iter_mut().for_each(|x| *x = gelu(*x));
}

/// GELU as BERT computes it, `x·Φ(x)` with the exact normal CDF.
#[inline(always)]
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x / std::f32::consts::SQRT_2))
}

/// The error function (Abramowitz & Stegun 7.1.26, |error| < 1.5e-7).
#[inline(always)]
fn erf(x: f32) -> f32 {
    let s = x.signum();
    let x = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let y = 1.0
        - (((((1.061_405_4 * t - 1.453_152_1) * t) + 1.421_413_8) * t - 0.284_496_74) * t + 0.254_829_6)
            * t
            * exp_neg(-x * x);
    s * y
}

/// `e^x` for `x <= 0`, in arithmetic that vectorises (no call, no branch): Cephes' `expf`,
/// `x = n·ln 2 + r` with a degree-5 polynomial in `r`, times `2^n` built from its exponent bits.
/// Below -87.3 (where `2^n` would stop being a normal number) it gives `e^-87.3`, about 1e-38.
#[inline(always)]
fn exp_neg(x: f32) -> f32 {
    // Adding 1.5·2^23 rounds to a whole number (ties to even); its low bits are that number.
    const SHIFT: f32 = 12_582_912.0;
    let x = x.clamp(-87.336_54, 0.0);
    let t = x * std::f32::consts::LOG2_E + SHIFT;
    let n = t - SHIFT;
    let whole = t.to_bits() as i32 - SHIFT.to_bits() as i32;
    let r = (x - n * 0.693_359_4) - n * -2.121_944_4e-4;
    let mut p = 1.987_569_1e-4;
    for c in [1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 1.666_666_5e-1, 0.5] {
        p = p * r + c;
    }
    (p * r * r + r + 1.0) * f32::from_bits(((whole + 127) << 23) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layout ovmem's build script writes (`build.rs`), by its index formula: weight
    /// (r, j) sits in block r/16, group j/4, lane r%16, place j%4.
    fn packed(q: Vec<i8>, rows: usize, cols: usize) -> Packed {
        let sums = q.chunks_exact(cols).map(|r| r.iter().map(|&v| v as i32).sum()).collect();
        let mut p = vec![0i8; rows * cols];
        for r in 0..rows {
            for j in 0..cols {
                p[((r / BLOCK) * (cols / GROUP) + j / GROUP) * BLOCK * GROUP + (r % BLOCK) * GROUP + j % GROUP] =
                    q[r * cols + j];
            }
        }
        Packed { rows, cols, scales: vec![1.0; rows], sums, q: Box::leak(p.into_boxed_slice()) }
    }

    /// Every path gives the plain row-major sums exactly, for any number of rows, with the
    /// extremes of int8 on both sides.
    #[test]
    fn products_match_the_plain_sums() {
        let (n, k) = (48, 64);
        let w: Vec<i8> = (0..n * k).map(|v| ((v * 37 + 11) % 255) as i8).map(|v| v.max(-127)).collect();
        let p = packed(w.clone(), n, k);
        for t in [1, 3, 4, 5, 8, 9, 13, 16, 17] {
            let mut x: Vec<i8> = (0..k * t).map(|v| (((v * 53 + 7) % 255) as i16 - 127) as i8).collect();
            x[0] = 127;
            x[1] = -127;
            let want: Vec<i32> = x
                .chunks_exact(k)
                .flat_map(|xr| {
                    w.chunks_exact(k).map(move |wr| xr.iter().zip(wr).map(|(&a, &b)| a as i32 * b as i32).sum())
                })
                .collect();
            let mut got = vec![0; t * n];
            products_plain(&x, &p, &mut got);
            assert_eq!(got, want, "plain, {t} rows");
            let mut got = vec![0; t * n];
            products(&x, &p, &mut got);
            assert_eq!(got, want, "fastest path here, {t} rows");
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                let mut got = vec![0; t * n];
                // SAFETY: the CPU has AVX2.
                unsafe { products_avx2(&x, &p, &mut got) };
                assert_eq!(got, want, "AVX2, {t} rows");
            }
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avxvnni") {
                let mut got = vec![0; t * n];
                // SAFETY: the CPU has AVX2 and AVX-VNNI.
                unsafe { products_avxvnni(&x, &p, &mut got) };
                assert_eq!(got, want, "AVX-VNNI, {t} rows");
            }
            #[cfg(target_arch = "aarch64")]
            {
                let mut got = vec![0; t * n];
                // SAFETY: every aarch64 CPU has NEON.
                unsafe { arm::products_neon(&x, &p, &mut got) };
                assert_eq!(got, want, "NEON, {t} rows");
                if std::arch::is_aarch64_feature_detected!("dotprod") {
                    let mut got = vec![0; t * n];
                    // SAFETY: the CPU has the dot-product extension.
                    unsafe { arm::products_sdot(&x, &p, &mut got) };
                    assert_eq!(got, want, "sdot, {t} rows");
                }
            }
        }
    }

    /// Quantising gives the same bytes and scale on every path (AVX-512, AVX2) as one value at
    /// a time, ties, signed zeros and rows that do not fill a register included.
    #[test]
    fn quantising_is_the_same_whatever_the_instructions() {
        for len in [1, 15, 16, 17, 384, 1536] {
            for seed in 0..4u32 {
                let mut row: Vec<f32> = (0..len as u32)
                    .map(|i| ((i.wrapping_mul(2_654_435_761) ^ seed) % 2001) as f32 / 37.0 - 27.0)
                    .collect();
                row[0] = -0.0;
                if len > 2 {
                    // Exactly half a step from a whole number once scaled: a tie.
                    let max = row.iter().fold(0f32, |m, v| m.max(v.abs()));
                    row[1] = 2.5 * max / 127.0;
                }
                let max = row.iter().fold(0f32, |m, v| m.max(v.abs()));
                let s = if max > 0.0 { max / 127.0 } else { 1.0 };
                let mut want = vec![0i8; len];
                quantise_tail(&row, &mut want, 1.0 / s);
                let mut got = vec![0i8; len];
                assert_eq!(quantise(&row, &mut got), s, "{len}");
                assert_eq!(got, want, "{len} values");
                #[cfg(target_arch = "x86_64")]
                if std::arch::is_x86_feature_detected!("avx2") {
                    let mut got = vec![0i8; len];
                    // SAFETY: the CPU has AVX2.
                    assert_eq!(unsafe { quantise_avx2(&row, &mut got) }, s, "{len}");
                    assert_eq!(got, want, "AVX2, {len} values");
                }
            }
        }
        let mut q = [1i8; 20];
        assert_eq!(quantise(&[0.0; 20], &mut q), 1.0);
        assert_eq!(q, [0; 20]);
    }

    /// GELU gives the same bits on every path, and stays within 3e-7 of `x` of the true GELU
    /// (the erf approximation is within 1.5e-7, its evaluation in f32 adds about as much: 2.3e-7
    /// at worst here); `exp_neg` is within 2e-7 of `f32::exp`, relatively.
    #[test]
    fn gelu_is_the_same_whatever_the_instructions() {
        let xs: Vec<f32> = (0..=4000)
            .map(|i| (i as f32 - 2000.0) / 100.0)
            .chain([0.0, -0.0, 1e-30, -1e-30, 60.0, -60.0, f32::MAX, f32::MIN])
            .collect();
        let one: Vec<f32> = xs.iter().map(|&x| gelu(x)).collect();
        let mut got = xs.clone();
        gelu_all(&mut got);
        assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            one.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            let mut got = xs.clone();
            // SAFETY: the CPU has AVX2.
            unsafe { gelu_avx2(&mut got) };
            assert_eq!(
                got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                one.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            );
        }
        for (&x, &g) in xs.iter().zip(&one).filter(|(x, _)| x.abs() <= 30.0) {
            let exact = 0.5 * x as f64 * (1.0 + libm_erf(x as f64 / std::f64::consts::SQRT_2));
            assert!((g as f64 - exact).abs() <= 3e-7 * (x.abs() as f64).max(1e-3), "gelu({x}): {g} against {exact}");
        }
        for i in 0..=8700 {
            let x = -(i as f32) / 100.0;
            let (got, want) = (exp_neg(x), x.exp());
            assert!((got - want).abs() <= 2e-7 * want, "exp({x}): {got} against {want}");
        }
    }

    /// Attention gives the same bits on every path, and its softmax's `exp` is the plain one's
    /// within float error.
    #[test]
    fn attention_is_the_same_whatever_the_instructions() {
        for t in [1, 7, 33] {
            let fill = |seed: u32| -> Vec<f32> {
                (0..(t * HIDDEN) as u32)
                    .map(|i| ((i.wrapping_mul(2_654_435_761) ^ seed) % 1000) as f32 / 250.0 - 2.0)
                    .collect()
            };
            let (q, k, v) = (fill(1), fill(2), fill(3));
            let plain = attention_plain(&q, &k, &v, t);
            assert_eq!(attention(&q, &k, &v, t), plain, "{t} positions");
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2.
                assert_eq!(unsafe { attention_avx2(&q, &k, &v, t) }, plain, "AVX2, {t} positions");
            }
            // The same softmax with the library's exp.
            let scale = 1.0 / (HEAD as f32).sqrt();
            for (h, i) in [(0, 0), (HEADS - 1, t - 1)] {
                let o = h * HEAD;
                let s: Vec<f32> =
                    (0..t).map(|j| dot32(&q[i * HIDDEN + o..][..HEAD], &k[j * HIDDEN + o..][..HEAD]) * scale).collect();
                let max = s.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x));
                let e: Vec<f32> = s.iter().map(|x| (x - max).exp()).collect();
                let sum: f32 = e.iter().sum();
                for d in 0..HEAD {
                    let want: f32 = (0..t).map(|j| e[j] / sum * v[j * HIDDEN + o + d]).sum();
                    let got = plain[i * HIDDEN + o + d];
                    assert!((got - want).abs() <= 1e-5, "{t} positions, head {h}, row {i}: {got} against {want}");
                }
            }
        }
    }

    /// erf in f64, for the test only (Abramowitz & Stegun 7.1.28 is not precise enough; this
    /// is the series below 3 and the continued fraction above, both to 1e-15).
    fn libm_erf(x: f64) -> f64 {
        let a = x.abs();
        let v = if a < 3.0 {
            let (mut term, mut sum, mut n) = (a, a, 0.0);
            while term.abs() > 1e-17 {
                n += 1.0;
                term *= -a * a / n;
                sum += term / (2.0 * n + 1.0);
            }
            2.0 / std::f64::consts::PI.sqrt() * sum
        } else {
            let mut f = 0.0;
            for k in (1..60).rev() {
                f = k as f64 / 2.0 / (a + f);
            }
            1.0 - (-a * a).exp() / std::f64::consts::PI.sqrt() / (a + f)
        };
        v.copysign(x)
    }
}
