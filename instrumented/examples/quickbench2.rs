//! Instruction-count harness: `callgrind` this with a case name and an iteration count.
use std::hint::black_box;
fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_default();
    let it: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(200_000);
    if mode.ends_with("_off") {
        lockscope::detector::set_enabled(false);
    }
    rt.block_on(async move {
        tokio::spawn(async move {
            let rm = tokio::sync::Mutex::new(0u64);
            let lm = lockscope::tokio::Mutex::new(0u64);
            let rs = tokio::sync::Semaphore::new(4);
            let ls = lockscope::tokio::Semaphore::new(4);
            let rr = tokio::sync::RwLock::new(0u64);
            let lr = lockscope::tokio::RwLock::new(0u64);
            match mode.trim_end_matches("_off") {
                "raw_mutex" => {
                    for _ in 0..it {
                        let mut g = rm.lock().await;
                        *g += 1;
                    }
                }
                "mutex" => {
                    for _ in 0..it {
                        let mut g = lm.lock().await;
                        *g += 1;
                    }
                }
                "raw_sem" => {
                    for _ in 0..it {
                        let p = rs.acquire().await.unwrap();
                        black_box(&p);
                    }
                }
                "sem" => {
                    for _ in 0..it {
                        let p = ls.acquire().await.unwrap();
                        black_box(&p);
                    }
                }
                "raw_rw" => {
                    for _ in 0..it {
                        let g = rr.read().await;
                        black_box(*g);
                    }
                }
                "rw" => {
                    for _ in 0..it {
                        let g = lr.read().await;
                        black_box(*g);
                    }
                }
                other => panic!("unknown case {other}"),
            }
        })
        .await
        .unwrap();
    });
}
