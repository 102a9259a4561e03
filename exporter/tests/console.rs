//! lockscope primitives in tokio-console: a real console-subscriber server, a real gRPC client
//! (console-api), and a named primitive whose resource and state must show up in the updates.
//! No `tokio_unstable` is needed: the resources are lockscope's own spans.

use std::collections::HashMap;
use std::panic::Location;
use std::time::{Duration, Instant};

use console_api::instrument::InstrumentRequest;
use console_api::instrument::instrument_client::InstrumentClient;
use lockscope_detector::hooks::{self, Acq, Mode, PrimCell, PrimKind};
use tracing_subscriber::layer::SubscriberExt;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

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

#[test]
fn named_primitives_and_their_state_show_up_in_tokio_console() {
    let port = free_port();
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
    let subscriber = tracing_subscriber::registry().with(layer);
    let _default = tracing::subscriber::set_default(subscriber);

    // A named mutex and semaphore, through the same hooks the wrappers call.
    let site = Location::caller();
    let mutex = PrimCell::new(Some("console_db".into()), PrimKind::Mutex, site, 1);
    let sem = PrimCell::new(Some("console_pool".into()), PrimKind::Semaphore, site, 4);
    let held = hooks::acquired(mutex.get(), Acq::new(site, 1, Mode::Exclusive));
    let permits = hooks::acquired(sem.get(), Acq::new(site, 3, Mode::Permits));

    let found = rt.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut client = loop {
            match InstrumentClient::connect(format!("http://127.0.0.1:{port}")).await {
                Ok(c) => break c,
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => panic!("console server never answered: {e}"),
            }
        };
        let mut updates = client
            .watch_updates(InstrumentRequest {})
            .await
            .expect("watch_updates")
            .into_inner();
        // Resource id -> concrete type, and the latest stats seen per id.
        let mut types: HashMap<u64, String> = HashMap::new();
        let mut stats: HashMap<u64, console_api::resources::Stats> = HashMap::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let msg = tokio::time::timeout(left, updates.message())
                .await
                .expect("no console update naming both primitives within 30 s")
                .expect("stream error")
                .expect("stream ended");
            if let Some(r) = msg.resource_update {
                for res in r.new_resources {
                    if let Some(id) = res.id {
                        types.insert(id.id, res.concrete_type);
                    }
                }
                for (id, s) in r.stats_update {
                    stats.insert(id, s);
                }
            }
            let find = |name: &str| {
                types
                    .iter()
                    .find(|(_, t)| t.as_str() == name)
                    .and_then(|(id, _)| stats.get(id))
                    .cloned()
            };
            if let (Some(m), Some(s)) = (find("Mutex(console_db)"), find("Semaphore(console_pool)"))
            {
                let locked = attr(&m, "locked");
                let available = attr(&s, "permits");
                if locked.as_deref() == Some("true") && available.as_deref() == Some("1") {
                    return (locked, available);
                }
            }
        }
    });
    assert_eq!(found.0.as_deref(), Some("true"));
    assert_eq!(found.1.as_deref(), Some("1"), "4 permits, 3 held");
    hooks::released(sem.get(), permits);
    hooks::released(mutex.get(), held);
    rt.shutdown_background();
}
