//! The detector's registry of live primitives: no leaks, names as given, bad names cleaned.
//!
//! A test binary of its own, so that `live_count()` only moves with what these tests do; the
//! tests take one lock so that they do not move it for each other either.

use std::sync::{Arc, Mutex as StdMutex, MutexGuard as StdGuard};

use lockscope::detector::{self, __private::prim};
use lockscope::tokio::{Mutex, RwLock, Semaphore};

const N: usize = 100_000;

fn serial() -> StdGuard<'static, ()> {
    static SERIAL: StdMutex<()> = StdMutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The live primitives named `name`.
fn named(name: &str) -> Vec<detector::LockSnapshot> {
    detector::locks()
        .into_iter()
        .filter(|l| l.name == name)
        .collect()
}

#[test]
fn a_hundred_thousand_of_each_kind_come_and_go() {
    let _serial = serial();
    let baseline = prim::live_count();

    let mutexes: Vec<Mutex<u32>> = (0..N).map(|i| Mutex::new(i as u32)).collect();
    assert_eq!(
        prim::live_count(),
        baseline + N,
        "every Mutex::new registers"
    );
    drop(mutexes);
    assert_eq!(prim::live_count(), baseline, "every dropped Mutex leaves");

    let rwlocks: Vec<RwLock<u32>> = (0..N)
        .map(|i| {
            if i % 2 == 0 {
                RwLock::new(0)
            } else {
                RwLock::with_max_readers(0, 4)
            }
        })
        .collect();
    assert_eq!(prim::live_count(), baseline + N);
    drop(rwlocks);
    assert_eq!(prim::live_count(), baseline);

    let semaphores: Vec<Arc<Semaphore>> = (0..N).map(|i| Arc::new(Semaphore::new(i % 7))).collect();
    assert_eq!(prim::live_count(), baseline + N);
    drop(semaphores);
    assert_eq!(prim::live_count(), baseline);

    // `const_new` ones register on first use only; every other one here is used.
    let consts: Vec<Box<Mutex<u8>>> = (0..N).map(|_| Box::new(Mutex::const_new(0))).collect();
    let const_rw: Vec<Box<RwLock<u8>>> = (0..N)
        .map(|i| {
            Box::new(if i % 2 == 0 {
                RwLock::const_new(0)
            } else {
                RwLock::const_with_max_readers(0, 3)
            })
        })
        .collect();
    let const_sem: Vec<Box<Semaphore>> =
        (0..N).map(|_| Box::new(Semaphore::const_new(2))).collect();
    assert_eq!(
        prim::live_count(),
        baseline,
        "const_new registers nothing up front"
    );
    for i in (0..N).step_by(2) {
        *consts[i].try_lock().unwrap() += 1;
        drop(const_rw[i].try_read().unwrap());
        drop(const_sem[i].try_acquire().unwrap());
    }
    assert_eq!(
        prim::live_count(),
        baseline + 3 * N / 2,
        "used once: registered"
    );
    drop((consts, const_rw, const_sem));
    assert_eq!(prim::live_count(), baseline, "dropped: gone, used or not");
}

#[test]
fn a_primitive_used_once_leaves_the_registry_when_dropped() {
    let _serial = serial();
    let baseline = prim::live_count();
    let rt = current_thread();
    rt.block_on(async {
        let m = Arc::new(Mutex::named("registry_once_m", 0));
        let l = RwLock::named("registry_once_l", 0);
        let s = Semaphore::named("registry_once_s", 3);
        *m.clone().lock_owned().await += 1;
        *l.write().await += 1;
        drop(s.acquire_many(2).await.unwrap());
        assert_eq!(prim::live_count(), baseline + 3);
        for name in ["registry_once_m", "registry_once_l", "registry_once_s"] {
            let found = named(name);
            assert_eq!(found.len(), 1, "{name}: {found:#?}");
            assert!(found[0].holders.is_empty() && found[0].waiters.is_empty());
        }
        // A guard keeps the primitive alive (through its Arc) until it is dropped.
        let g = m.clone().lock_owned().await;
        drop(m);
        assert_eq!(
            named("registry_once_m").len(),
            1,
            "alive while its owned guard is"
        );
        assert_eq!(named("registry_once_m")[0].holders.len(), 1);
        drop(g);
        drop((l, s));
    });
    for name in ["registry_once_m", "registry_once_l", "registry_once_s"] {
        assert!(named(name).is_empty(), "{name} still listed after drop");
    }
    assert_eq!(prim::live_count(), baseline);
}

#[test]
fn names_are_what_named_gave_and_sites_otherwise() {
    let _serial = serial();
    let m = Mutex::named("registry_db", ());
    let l = RwLock::named(String::from("registry_cache"), ());
    let s = Semaphore::named("registry_db_writes", 4);
    assert_eq!(
        (m.name(), l.name(), s.name()),
        ("registry_db", "registry_cache", "registry_db_writes")
    );
    for (name, kind, capacity) in [
        ("registry_db", "mutex", 1),
        ("registry_cache", "rwlock", u64::from(u32::MAX >> 3)),
        ("registry_db_writes", "semaphore", 4),
    ] {
        let found = named(name);
        assert_eq!(found.len(), 1, "{name}: {found:#?}");
        assert_eq!(
            (found[0].kind, found[0].capacity, found[0].available),
            (kind, capacity, capacity)
        );
        assert!(
            found[0].created_at.starts_with(&format!("{}:", file!())),
            "created_at names this file: {found:#?}"
        );
    }
    // No name: the creation site, `file:line`.
    let line = line!() + 1;
    let anonymous = Mutex::new(());
    let site = format!("{}:{line}", file!());
    assert_eq!(anonymous.name(), site);
    assert_eq!(named(&site).len(), 1);
    // `const_new` in a static: the site of the `const_new` call, registered on first use.
    static LAZY: Semaphore = Semaphore::const_new(1);
    let lazy_site = format!("{}:{}", file!(), line!() - 1);
    drop(LAZY.try_acquire().unwrap());
    assert_eq!(LAZY.name(), lazy_site);
    assert_eq!(named(&lazy_site).len(), 1);
}

#[test]
fn invalid_names_are_cleaned_never_a_panic() {
    let _serial = serial();
    let long_ascii = "x".repeat(201);
    // 'é' is two bytes: 101 of them are 202 bytes, and byte 200 is a char boundary...
    let long_accented = "é".repeat(101);
    // ...while here byte 200 falls inside a character (1 + 2 * 100 = 201 bytes).
    let long_odd = format!("a{}", "é".repeat(100));
    let exactly_200 = "y".repeat(200);
    let cases: Vec<(String, String)> = vec![
        (String::new(), "unnamed".into()),
        ("tab\there".into(), "tab?here".into()),
        ("new\nline\r".into(), "new?line?".into()),
        ("nul\0bell\u{7}".into(), "nul?bell?".into()),
        ("del\u{7f}c1\u{85}".into(), "del?c1?".into()),
        (long_ascii.clone(), "x".repeat(200)),
        (long_accented.clone(), "é".repeat(100)),
        (long_odd.clone(), format!("a{}", "é".repeat(99))),
        (exactly_200.clone(), exactly_200.clone()),
        ("ünïcödé ✓ fine".into(), "ünïcödé ✓ fine".into()),
    ];
    for (given, expected) in &cases {
        let m = Mutex::named(given, ());
        let l = RwLock::named(given, ());
        let s = Semaphore::named(given, 1);
        for (what, name) in [
            ("mutex", m.name()),
            ("rwlock", l.name()),
            ("semaphore", s.name()),
        ] {
            assert_eq!(name, expected, "{what} named {given:?}");
            assert!(name.len() <= 200 && !name.is_empty() && !name.chars().any(char::is_control));
        }
        // What locks() shows is the cleaned name, and the primitive works.
        assert!(m.try_lock().is_ok() && l.try_write().is_ok() && s.try_acquire().is_ok());
        assert_eq!(named(expected).len(), 3, "{given:?} listed as {expected:?}");
    }
}

#[test]
fn racing_first_uses_of_const_new_register_each_primitive_once() {
    let _serial = serial();
    let baseline = prim::live_count();
    const K: usize = 2_000;
    let consts: Vec<Box<Semaphore>> = (0..K).map(|_| Box::new(Semaphore::const_new(1))).collect();
    let barrier = std::sync::Barrier::new(2);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                barrier.wait();
                for s in &consts {
                    // Both threads race to register each one on first use.
                    let _ = s.name();
                }
            });
        }
    });
    assert_eq!(
        prim::live_count(),
        baseline + K,
        "one registration per primitive"
    );
    drop(consts);
    assert_eq!(prim::live_count(), baseline);
}
