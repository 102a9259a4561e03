//! The demo service (placeholder until the examples issue fills it): serves the exporter.
#[tokio::main]
async fn main() {
    let server = lockscope::exporter::serve(lockscope::exporter::DEFAULT_ADDR)
        .await
        .expect("bind");
    println!("lockscope demo: metrics on http://{}/metrics", server.local_addr());
    let m = lockscope::tokio::Mutex::named("demo", 0u64);
    *m.lock().await += 1;
    tokio::signal::ctrl_c().await.ok();
}
