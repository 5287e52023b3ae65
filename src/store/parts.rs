//! Partitions of a large bank's first vectors, grouped by meaning (k-means on their sign bits),
//! so that a search reads the partitions nearest to its question instead of every vector: at a
//! million memories, reading every first vector's signs (56 MB) was most of a prompt hook.
//! A bank smaller than [`PARTITION_AT`] is not partitioned, and its search reads every vector.

use crate::embed::{self, Code, CODE_BYTES, DIMS};

/// First vectors a bank has before they are partitioned (1.8 MB of signs, read in about 1 ms;
/// at 100,000 every one's signs took 3.8 ms of a prompt hook after its question was encoded).
pub const PARTITION_AT: usize = 32_768;
/// Partitions of a bank: about 4,000 first vectors each at a million memories.
pub const PARTS: usize = 256;
/// First vectors a partitioned search reads at most: the nearest partitions until they hold a
/// quarter of the bank, at least as many as the largest bank not partitioned, at most this many
/// (at a million memories, one in eight).
pub const PROBE: usize = 131_072;

/// First vectors a search of a partitioned bank of `heads` first vectors reads (see [`PROBE`]).
pub fn probe_for(heads: usize) -> usize {
    (heads / 4).clamp(PARTITION_AT, PROBE)
}
/// First vectors the partitions are trained on at most: an even sample of the bank.
pub const SAMPLE: usize = 16_384;
/// Rounds of k-means.
const ROUNDS: usize = 8;
/// Vectors of the sample per partition at least (fewer partitions for a smaller sample).
const PER_PART: usize = 39;

/// The centre of each partition: a unit vector, kept as an int8 code (what is stored is what is
/// used).
#[derive(Debug, Clone, PartialEq)]
pub struct Centroids(Vec<Vec<f32>>);

impl Centroids {
    /// Partitions trained on `sample` (unit vectors; deterministic: the same sample gives the
    /// same partitions): spherical k-means, each centre its members' normalised mean, started from
    /// evenly spaced members; up to [`PARTS`] partitions, with [`PER_PART`] of the sample each.
    pub fn train(sample: &[Vec<f32>]) -> Centroids {
        let k = (sample.len() / PER_PART).clamp(1, PARTS);
        let mut centres =
            Centroids((0..k).map(|i| sample.get(i * sample.len() / k).cloned().unwrap_or(vec![0.0; DIMS])).collect());
        for _ in 0..ROUNDS {
            let mut sums = vec![vec![0f32; DIMS]; k];
            let mut members = vec![0u32; k];
            for v in sample {
                let part = centres.nearest(v);
                members[part] += 1;
                sums[part].iter_mut().zip(v).for_each(|(s, x)| *s += x);
            }
            for (part, sum) in sums.into_iter().enumerate() {
                let norm = embed::dot(&sum, &sum).sqrt();
                // A partition left empty keeps its centre.
                if members[part] > 0 && norm > 0.0 {
                    centres.0[part] = sum.into_iter().map(|x| x / norm).collect();
                }
            }
        }
        Centroids::from_bytes(&centres.to_bytes()).expect("codes just written")
    }

    /// The partition of a vector: the centre nearest to it (the first of those as near).
    pub fn nearest(&self, v: &[f32]) -> usize {
        let mut best = (f32::MIN, 0);
        dots(&self.0, v, |part, d| {
            if d > best.0 {
                best = (d, part);
            }
        });
        best.1
    }

    /// The partition of a vector known by its sign bits alone: the centre nearest to the vector
    /// of its signs (as good as its own vector's in the measurements: docs/benchmarks.md).
    pub fn nearest_signs(&self, signs: &[u8]) -> usize {
        let unit = 1.0 / (DIMS as f32).sqrt();
        let v: Vec<f32> = (0..DIMS).map(|i| if signs[i / 8] >> (i % 8) & 1 == 1 { unit } else { -unit }).collect();
        self.nearest(&v)
    }

    /// Every partition, nearest to a vector first.
    pub fn ranked(&self, v: &[f32]) -> Vec<usize> {
        let mut by: Vec<(f32, usize)> = Vec::with_capacity(self.0.len());
        dots(&self.0, v, |part, d| by.push((d, part)));
        by.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        by.into_iter().map(|(_, part)| part).collect()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        self.0.iter().flat_map(|c| Code::new(c).to_bytes()).collect()
    }

    /// Centres as [`to_bytes`](Self::to_bytes) wrote them; `None` for bytes that are not.
    pub fn from_bytes(b: &[u8]) -> Option<Centroids> {
        if b.is_empty() || !b.len().is_multiple_of(CODE_BYTES) {
            return None;
        }
        b.chunks_exact(CODE_BYTES).map(Code::decode).collect::<Option<_>>().map(Centroids)
    }
}

/// Calls `each` with every centre's dot product with `v`, in order, in the CPU's widest
/// vector instructions where it has them (a partitioning computes millions).
fn dots(centres: &[Vec<f32>], v: &[f32], mut each: impl FnMut(usize, f32)) {
    #[inline(always)]
    fn all(centres: &[Vec<f32>], v: &[f32], each: &mut dyn FnMut(usize, f32)) {
        for (part, c) in centres.iter().enumerate() {
            each(part, embed::dot(c, v));
        }
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        #[target_feature(enable = "avx2,fma")]
        unsafe fn wide(centres: &[Vec<f32>], v: &[f32], each: &mut dyn FnMut(usize, f32)) {
            all(centres, v, each)
        }
        // SAFETY: the CPU has these instructions (checked above).
        return unsafe { wide(centres, v, &mut each) };
    }
    all(centres, v, &mut each)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A partitioned bank's search reads a quarter of it, never fewer first vectors than the
    /// largest bank not partitioned reads, never more than [`PROBE`]: a million memories read as
    /// many as before partitions began at 32,768.
    #[test]
    fn a_search_probes_a_quarter_of_a_partitioned_bank_within_bounds() {
        assert_eq!(probe_for(PARTITION_AT), PARTITION_AT);
        assert_eq!(probe_for(100_020), PARTITION_AT);
        assert_eq!(probe_for(300_000), 75_000);
        assert_eq!(probe_for(1_000_020), PROBE);
        assert!((0..40).map(|i| 1usize << i).all(|n| (PARTITION_AT..=PROBE).contains(&probe_for(n))));
    }

    fn unit(v: Vec<f32>) -> Vec<f32> {
        let n = embed::dot(&v, &v).sqrt();
        v.into_iter().map(|x| x / n).collect()
    }

    /// Unit vectors scattered around `groups` random centres, in random order, with the group
    /// of each (deterministic).
    pub(crate) fn clustered(groups: usize, n: usize, seed: u64) -> (Vec<Vec<f32>>, Vec<usize>) {
        let mut x = seed;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f32 / (1u64 << 53) as f32 - 0.5
        };
        let centres: Vec<Vec<f32>> = (0..groups).map(|_| unit((0..DIMS).map(|_| next()).collect())).collect();
        (0..n)
            .map(|_| {
                let g = ((next() + 0.5) * groups as f32) as usize % groups;
                let v = unit(centres[g].iter().map(|c| c + 0.04 * next()).collect());
                (v, g)
            })
            .unzip()
    }

    #[test]
    fn a_query_finds_its_neighbours_in_the_few_partitions_nearest_to_it() {
        const GROUPS: usize = 32;
        let (vs, group) = clustered(GROUPS, PER_PART * GROUPS, 7);
        let parts = Centroids::train(&vs);
        assert_eq!(parts, Centroids::train(&vs), "training is deterministic");
        assert_eq!(parts.len(), GROUPS);
        let part: Vec<usize> = vs.iter().map(|v| parts.nearest(v)).collect();
        // No partition holds much more than its share.
        let mut sizes = vec![0; GROUPS];
        part.iter().for_each(|&p| sizes[p] += 1);
        assert!(sizes.iter().all(|&n| n <= 4 * PER_PART), "{sizes:?}");
        // A vector's group (its true neighbours) sits in the 2 partitions nearest to it, all but
        // a few of them, though they are 1/16 of the partitions.
        let (mut found, mut all) = (0, 0);
        for q in (0..vs.len()).step_by(7) {
            let probed: std::collections::HashSet<usize> = parts.ranked(&vs[q]).into_iter().take(2).collect();
            for i in (0..vs.len()).filter(|&i| group[i] == group[q]) {
                all += 1;
                found += usize::from(probed.contains(&part[i]));
            }
        }
        assert!(found * 100 >= all * 95, "{found} of {all} neighbours in the probed partitions");
        // Known by its signs alone, a vector mostly lands in the same partition.
        let same = vs.iter().zip(&part).filter(|(v, &p)| parts.nearest_signs(&embed::bits(v)) == p).count();
        assert!(same * 100 >= vs.len() * 90, "{same} of {} by their signs", vs.len());
        // Every partition is ranked once, the nearest first.
        let mut ranked = parts.ranked(&vs[3]);
        assert_eq!(ranked[0], part[3]);
        ranked.sort_unstable();
        ranked.dedup();
        assert_eq!(ranked.len(), GROUPS);
        assert_eq!(Centroids::from_bytes(&parts.to_bytes()), Some(parts));
        assert_eq!(Centroids::from_bytes(&[1, 2, 3]), None);
        assert_eq!(Centroids::from_bytes(&[]), None);
    }

    #[test]
    fn a_tiny_or_uniform_sample_trains_without_failing() {
        let one = Centroids::train(&[unit(vec![1.0; DIMS])]);
        assert_eq!(one.len(), 1);
        assert_eq!(one.nearest(&[0.0; DIMS]), 0);
        let same = Centroids::train(&vec![unit(vec![0.5; DIMS]); 100 * PER_PART]);
        assert_eq!(same.len(), 100);
        assert_eq!(same.nearest(&unit(vec![0.5; DIMS])), 0, "ties go to the first partition");
        assert_eq!(Centroids::train(&[]).len(), 1, "nothing to train on: one partition");
    }
}
