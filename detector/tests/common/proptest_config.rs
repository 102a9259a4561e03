//! The proptest configuration both property tests use.

use proptest::prelude::ProptestConfig;
use proptest::test_runner::RngSeed;

/// `cases` cases from the fixed `seed` (CI is deterministic) unless `PROPTEST_RNG_SEED` is set;
/// `PROPTEST_CASES` overrides `cases`; no persistence files.
pub fn config(cases: u32, seed: u64) -> ProptestConfig {
    let base = ProptestConfig::default();
    ProptestConfig {
        cases: if std::env::var_os("PROPTEST_CASES").is_some() {
            base.cases
        } else {
            cases
        },
        rng_seed: match base.rng_seed {
            RngSeed::Random => RngSeed::Fixed(seed),
            seed => seed,
        },
        failure_persistence: None,
        ..base
    }
}
