//! A correct program the detector must stay silent on, beside two threads spinning on a CPU
//! each (a machine loaded to twice its cores, on 2 cores). Its own process (one test): the
//! hogs would slow every other control in a shared one, and those have thresholds of their own.

mod common;

/// `negative_controls::short_parking_lot_sections_in_tasks` at the test default (10 ms), 20
/// shorter runs beside two threads spinning on a CPU each: on a 2-core machine
/// the workers get less than a core each, and the OS deschedules them for whole time slices,
/// inside the section too: blocking waits of 11-12 ms were seen while other builds ran, and of
/// 50-150 ms beside the hogs, all of them the OS's doing.
#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_parking_lot_sections_beside_two_cpu_hogs() {
    let _hogs = common::cpu_hogs(2);
    for _ in 0..20 {
        common::short_parking_lot_sections("neg_pl_counter_hogs", 10_000).await;
    }
}
