//! The merge of `report_loans`' buckets that share their (key, keyId): every group without an
//! id, and an officer's groups under blank names or the id, when names are read.

use crate::Bucket;
use loanhost_guest::Decimal;

/// Merges buckets with the same (key, keyId), keeping the first one's place. Only buckets
/// marked `twin` can share theirs (a person's bucket keyed by their name, not their id, is
/// the only one with that name and id), so only they are looked up: an organisation's
/// officers are thousands of buckets, of which a few at most have no id or no name. The keys
/// are looked up borrowed (no copies), with a multiply-rotate hash.
pub(crate) fn merge(buckets: Vec<Bucket>) -> Vec<Bucket> {
    use std::collections::HashMap;
    use std::hash::BuildHasherDefault;
    let first: Vec<usize> = {
        let twins = buckets.iter().filter(|b| b.twin).count();
        let mut seen: HashMap<(&str, Option<&str>), usize, BuildHasherDefault<KeyHasher>> =
            HashMap::with_capacity_and_hasher(twins, Default::default());
        buckets
            .iter()
            .enumerate()
            .map(|(i, b)| match b.twin {
                true => *seen.entry((&b.key, b.key_id.as_deref())).or_insert(i),
                false => i,
            })
            .collect()
    };
    if first.iter().enumerate().all(|(i, &f)| f == i) {
        return buckets;
    }
    let mut slots: Vec<Option<Bucket>> = buckets.into_iter().map(Some).collect();
    for (i, &f) in first.iter().enumerate() {
        if f == i {
            continue;
        }
        let b = slots[i].take().expect("a twin is taken once");
        let o = slots[f]
            .as_mut()
            .expect("a bucket's first twin stays in place");
        let (ov, bv) = (o.values(), b.values());
        o.count += b.count;
        o.with_value += b.with_value;
        // Written back as text (`to_text` reads back exactly): twins are rare.
        let sum = match (ov.sum, bv.sum) {
            (Some(x), Some(y)) => Some(x + y),
            (x, y) => x.or(y),
        };
        o.sum = sum.map(Decimal::to_text);
        o.min = [ov.min, bv.min]
            .into_iter()
            .flatten()
            .min()
            .map(Decimal::to_text);
        o.max = [ov.max, bv.max]
            .into_iter()
            .flatten()
            .max()
            .map(Decimal::to_text);
    }
    slots.into_iter().flatten().collect()
}

/// A multiply-rotate hash over 8 bytes at a time (rustc's FxHash): the merge's keys are a
/// plugin's own rows, so SipHash's resistance to chosen keys buys nothing here.
#[derive(Default)]
struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        for &b in chunks.remainder() {
            self.add(u64::from(b));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

impl KeyHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}
