use std::sync::Arc;
use std::time::Duration;

use lockscope::detector;
use lockscope::tokio::{Mutex, Semaphore};

#[test]
fn abba_deadlock_is_found() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let a = Arc::new(Mutex::named("smoke_a", ()));
        let b = Arc::new(Mutex::named("smoke_b", ()));
        let barrier = Arc::new(tokio::sync::Barrier::new(2));
        let (a1, b1, br1) = (a.clone(), b.clone(), barrier.clone());
        tokio::spawn(async move {
            let _ga = a1.lock().await;
            br1.wait().await;
            let _gb = b1.lock().await;
        });
        let (a2, b2, br2) = (a.clone(), b.clone(), barrier.clone());
        tokio::spawn(async move {
            let _gb = b2.lock().await;
            br2.wait().await;
            let _ga = a2.lock().await;
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            detector::check_now();
            let f = detector::findings();
            if f.iter().any(|f| f.kind == detector::FindingKind::Deadlock) {
                for x in &f {
                    println!("{x}\n");
                }
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no deadlock found: {f:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        println!(
            "{}",
            serde_json::to_string_pretty(&detector::locks()).unwrap()
        );
        let sem = Semaphore::named("smoke_sem", 2);
        let _p = sem.acquire().await.unwrap();
        let _q = sem.acquire().await.unwrap();
        for x in detector::findings() {
            println!("{x}\n");
        }
    });
    rt.shutdown_background();
}
