use std::hint::black_box;
fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mode = std::env::args().nth(1).unwrap_or_default();
    rt.block_on(async move {
        tokio::spawn(async move {
            let it = 200_000u64;
            let rm = tokio::sync::Mutex::new(0u64);
            let lm = lockscope::tokio::Mutex::new(0u64);
            let rs = tokio::sync::Semaphore::new(4);
            let ls = lockscope::tokio::Semaphore::new(4);
            match mode.as_str() {
                "raw" => {
                    for _ in 0..it {
                        let mut g = rm.lock().await;
                        *g += 1;
                    }
                }
                "lock" => {
                    for _ in 0..it {
                        let mut g = lm.lock().await;
                        *g += 1;
                    }
                }
                "rawsem" => {
                    for _ in 0..it {
                        let p = rs.acquire().await.unwrap();
                        black_box(&p);
                    }
                }
                _ => {
                    for _ in 0..it {
                        let p = ls.acquire().await.unwrap();
                        black_box(&p);
                    }
                }
            }
            black_box(&lm);
        })
        .await
        .unwrap();
    });
}
