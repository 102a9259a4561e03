use std::hint::black_box;
use std::time::Instant;
fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        tokio::spawn(async {
            let it = 3_000_000u64;
            let rm = tokio::sync::Mutex::new(0u64);
            let lm = lockscope::tokio::Mutex::new(0u64);
            let rs = tokio::sync::Semaphore::new(4);
            let ls = lockscope::tokio::Semaphore::new(4);
            let rr = tokio::sync::RwLock::new(0u64);
            let lr = lockscope::tokio::RwLock::new(0u64);
            for round in 0..4 {
                macro_rules! t { ($e:expr) => {{ let t = Instant::now(); for _ in 0..it { $e; } t.elapsed().as_nanos() as f64 / it as f64 }} }
                let a = t!({ let mut g = rm.lock().await; *g += 1; });
                let b = t!({ let mut g = lm.lock().await; *g += 1; });
                let c = t!({ let p = rs.acquire().await.unwrap(); black_box(&p); });
                let d = t!({ let p = ls.acquire().await.unwrap(); black_box(&p); });
                let e = t!({ let g = rr.read().await; black_box(&*g); });
                let f = t!({ let g = lr.read().await; black_box(&*g); });
                println!("round {round}: mutex {a:.1} vs {b:.1} ({:.2}x)  sem {c:.1} vs {d:.1} ({:.2}x)  rw {e:.1} vs {f:.1} ({:.2}x)", b/a, d/c, f/e);
            }
        }).await.unwrap();
    });
}
