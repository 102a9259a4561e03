//! Instruction-count harness: `callgrind` this with a case name and an iteration count.
use std::hint::black_box;
fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_default();
    let it: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(200_000);
    if mode.starts_with("contended") || mode.starts_with("raw_contended") {
        return contended(&mode, it);
    }
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

fn contended(mode: &str, it: u64) {
    use std::sync::Arc;
    if mode.ends_with("_off") {
        lockscope::detector::set_enabled(false);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let per = it / 64;
    let raw = mode.starts_with("raw");
    let variant = mode.trim_start_matches("raw_contended").to_string();
    rt.block_on(async move {
        let rm = Arc::new(tokio::sync::Mutex::new(0u64));
        let lm = Arc::new(lockscope::tokio::Mutex::new(0u64));
        let sem = Arc::new(tokio::sync::Semaphore::new(1));
        let tasks: Vec<_> = (0..64)
            .map(|_| {
                let (rm, lm, sem) = (rm.clone(), lm.clone(), sem.clone());
                let variant = variant.clone();
                tokio::spawn(async move {
                    for _ in 0..per {
                        if raw && variant == "_sem" {
                            sem.acquire().await.unwrap().forget();
                            tokio::task::yield_now().await;
                            sem.add_permits(1);
                        } else if raw && variant == "_trysem" {
                            match sem.try_acquire() {
                                Ok(p) => p.forget(),
                                Err(_) => Box::pin(sem.acquire()).await.unwrap().forget(),
                            }
                            tokio::task::yield_now().await;
                            sem.add_permits(1);
                        } else if raw {
                            let mut g = rm.lock().await;
                            *g += 1;
                            tokio::task::yield_now().await;
                        } else {
                            let mut g = lm.lock().await;
                            *g += 1;
                            tokio::task::yield_now().await;
                        }
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
}
