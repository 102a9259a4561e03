//! tokio-console sees each lockscope primitive exactly once, by name, with its live state: a
//! real console-subscriber server, a real gRPC client (console-api), and the real wrappers.
//!
//! lockscope's resources are its own spans, so they need no `tokio_unstable`. Under
//! `tokio_unstable`, tokio also instruments its own primitives, and each wrapper holds one: had
//! that inner primitive been instrumented too, every lock would appear twice, once by name and
//! once as an anonymous tokio `Semaphore`. This file runs in both builds;
//! `scripts/console-tokio-unstable` runs it under `--cfg tokio_unstable` (a separate build).

use std::collections::HashMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use console_api::instrument::InstrumentRequest;
use console_api::instrument::instrument_client::InstrumentClient;
use tracing_subscriber::layer::SubscriberExt;

/// The value of attribute `name` as text, from a console `Stats`.
fn attr(stats: &console_api::resources::Stats, name: &str) -> Option<String> {
    use console_api::field::{Name, Value};
    stats.attributes.iter().find_map(|a| {
        let f = a.field.as_ref()?;
        let n = match f.name.as_ref()? {
            Name::StrName(s) => s.clone(),
            Name::NameIdx(_) => return None,
        };
        (n == name).then(|| match f.value.as_ref() {
            Some(Value::BoolVal(b)) => b.to_string(),
            Some(Value::U64Val(u)) => u.to_string(),
            Some(Value::I64Val(i)) => i.to_string(),
            Some(Value::StrVal(s)) => s.clone(),
            Some(Value::DebugVal(s)) => s.clone(),
            None => String::new(),
        })
    })
}

const NAMED: [&str; 3] = [
    "Mutex(console/once/db)",
    "RwLock(console/once/rates)",
    "Semaphore(console/once/pool)",
];

#[test]
fn each_primitive_is_one_console_resource() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let (layer, server) = console_subscriber::ConsoleLayer::builder()
        .server_addr(([127, 0, 0, 1], port))
        .publish_interval(Duration::from_millis(20))
        .build();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.spawn(async move {
        let _ = server.serve().await;
    });

    // The console layer is the subscriber of one thread only, which makes the primitives and
    // holds them: every resource the console reports comes from there.
    let (made_tx, made_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let maker = std::thread::spawn(move || {
        let _default = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
        let db = lockscope::tokio::Mutex::named("console/once/db", 0);
        let rates = lockscope::tokio::RwLock::named("console/once/rates", 1.0);
        let pool = lockscope::tokio::Semaphore::named("console/once/pool", 3);
        let _g = db.try_lock().expect("a fresh mutex");
        let _r = rates.try_read().expect("a fresh rwlock");
        let _p = pool.try_acquire_many(2).expect("a fresh semaphore");
        made_tx.send(()).expect("the test waits");
        let _ = done_rx.recv();
    });
    made_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the primitives were made");

    let (seen, stats) = rt.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut client = loop {
            match InstrumentClient::connect(format!("http://127.0.0.1:{port}")).await {
                Ok(c) => break c,
                Err(e) => {
                    assert!(
                        Instant::now() < deadline,
                        "console server never answered: {e}"
                    );
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        };
        let mut updates = client
            .watch_updates(InstrumentRequest {})
            .await
            .expect("watch_updates")
            .into_inner();
        // Resource id -> concrete type, and the latest stats per id. The first update lists
        // every resource alive; a few more let any late one, and the state, arrive.
        let mut seen: HashMap<u64, String> = HashMap::new();
        let mut stats: HashMap<u64, console_api::resources::Stats> = HashMap::new();
        let mut after_all = 0;
        while after_all < 5 {
            let left = deadline.saturating_duration_since(Instant::now());
            let msg = tokio::time::timeout(left, updates.message())
                .await
                .expect("console updates naming the three primitives within 30 s")
                .expect("stream error")
                .expect("stream ended");
            if let Some(u) = msg.resource_update {
                for r in u.new_resources {
                    if let Some(id) = r.id {
                        seen.insert(id.id, r.concrete_type);
                    }
                }
                stats.extend(u.stats_update);
            }
            if NAMED.iter().all(|n| seen.values().any(|t| t == n)) {
                after_all += 1;
            }
        }
        (seen, stats)
    });
    done_tx.send(()).expect("the maker waits");
    maker.join().expect("the maker thread");
    rt.shutdown_background();

    for name in NAMED {
        let n = seen.values().filter(|t| *t == name).count();
        assert_eq!(n, 1, "{name} appears {n} times: {seen:?}");
    }
    assert_eq!(
        seen.len(),
        NAMED.len(),
        "resources beyond lockscope's own (a wrapper's inner tokio primitive?): {seen:?}"
    );
    // The live state: the mutex is locked, one permit of three is left.
    let state = |name: &str, field: &str| {
        let (id, _) = seen.iter().find(|(_, t)| *t == name).expect("seen above");
        stats.get(id).and_then(|s| attr(s, field))
    };
    assert_eq!(state(NAMED[0], "locked").as_deref(), Some("true"));
    assert_eq!(
        state(NAMED[2], "permits").as_deref(),
        Some("1"),
        "3 permits, 2 held"
    );
}
