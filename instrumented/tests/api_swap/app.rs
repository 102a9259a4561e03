// A small program written against `tokio::sync`: a bank (Mutex), a config cache (RwLock)
// and a connection pool (Semaphore). It is compiled twice by `tests/api_swap.rs`: the only
// line that differs between the two copies is the `pub use` in the parent's `sync_impl`
// module (`tokio::sync::{...}` or `lockscope::tokio::{...}`), which the `use` below reads.
//
// `run()` returns a transcript of everything it observed; the two copies must produce the
// same transcript. Between them, the functions here call every public method of tokio's
// Mutex, RwLock and Semaphore, their guards and permits, and use the error types, `Debug`,
// `Default` and `From` impls (see the checklist in `tests/api_swap.rs`).

use std::collections::BTreeMap;
use std::error::Error;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::mpsc;

use super::sync_impl::{
    AcquireError, MappedMutexGuard, Mutex, MutexGuard, OwnedMappedMutexGuard, OwnedMutexGuard,
    OwnedRwLockMappedWriteGuard, OwnedRwLockReadGuard, OwnedRwLockWriteGuard, OwnedSemaphorePermit,
    RwLock, RwLockMappedWriteGuard, RwLockReadGuard, RwLockWriteGuard, Semaphore, SemaphorePermit,
    TryAcquireError, TryLockError,
};

/// The transcript.
pub type Log = Vec<String>;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Runs every part and returns what each observed, in order.
///
/// The statics below make a run observe the state left by the previous one, so runs of one
/// copy of this module are serialized (the test harness calls `run()` from several tests).
pub fn run() -> Log {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut log = Log::new();
    bank(&mut log);
    mutex_guards(&mut log);
    mutex_blocking(&mut log);
    unsized_values(&mut log);
    cache(&mut log);
    rwlock_guards(&mut log);
    rwlock_owned_guards(&mut log);
    rwlock_blocking(&mut log);
    pool(&mut log);
    permits(&mut log);
    semaphore_blocking(&mut log);
    errors(&mut log);
    panics(&mut log);
    log
}

// ---------------------------------------------------------------------------------------------
// A bank: accounts behind Mutexes
// ---------------------------------------------------------------------------------------------

/// Transfers made so far, across every bank (`const_new` in a static).
static TRANSFERS: Mutex<u64> = Mutex::const_new(0);

#[derive(Debug, Default)]
pub struct Account {
    pub owner: String,
    pub balance: i64,
}

pub struct Bank {
    accounts: Vec<Arc<Mutex<Account>>>,
}

impl Bank {
    pub fn new(balances: &[i64]) -> Bank {
        let accounts = balances
            .iter()
            .enumerate()
            .map(|(i, &b)| {
                Arc::new(Mutex::new(Account {
                    owner: format!("acct{i}"),
                    balance: b,
                }))
            })
            .collect();
        Bank { accounts }
    }

    /// Moves `amount` from `a` to `b`, locking in index order (no lock-order inversion).
    pub async fn transfer(&self, a: usize, b: usize, amount: i64) -> bool {
        let (lo, hi) = if a < b { (a, b) } else { (b, a) };
        let mut first = self.accounts[lo].lock().await;
        let mut second = self.accounts[hi].clone().lock_owned().await;
        let (from, to) = if a < b {
            (&mut *first, &mut *second)
        } else {
            (&mut *second, &mut *first)
        };
        if from.balance < amount {
            return false;
        }
        from.balance -= amount;
        to.balance += amount;
        *TRANSFERS.lock().await += 1;
        true
    }

    /// Balances without waiting: `None` for an account busy right now.
    pub fn audit(&self) -> Vec<Option<i64>> {
        self.accounts
            .iter()
            .map(|a| a.try_lock().ok().map(|g| g.balance))
            .collect()
    }

    /// Total, taking owned guards with `try_lock_owned`.
    pub fn total(&self) -> Option<i64> {
        let mut sum = 0;
        for a in &self.accounts {
            sum += a.clone().try_lock_owned().ok()?.balance;
        }
        Some(sum)
    }

    /// The bank's accounts, taken apart (`Arc::try_unwrap` + `into_inner`).
    pub fn close(self) -> Vec<Account> {
        self.accounts
            .into_iter()
            .map(|a| match Arc::try_unwrap(a) {
                Ok(m) => m.into_inner(),
                Err(_) => panic!("account still shared"),
            })
            .collect()
    }
}

fn bank(log: &mut Log) {
    let rt = runtime();
    let bank = Arc::new(Bank::new(&[100, 50, 0]));
    let results = rt.block_on(async {
        let mut tasks = Vec::new();
        for (a, b, amt) in [(0, 1, 30), (1, 2, 70), (2, 0, 10), (0, 2, 500)] {
            let bank = bank.clone();
            tasks.push(tokio::spawn(async move { bank.transfer(a, b, amt).await }));
        }
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap());
        }
        out
    });
    log.push(format!("transfers {results:?}"));
    log.push(format!("audit {:?}", bank.audit()));
    // Hold one account: audit and total see it busy.
    let held = bank.accounts[1].try_lock().unwrap();
    log.push(format!("audit while held {:?}", bank.audit()));
    log.push(format!("total while held {:?}", bank.total()));
    drop(held);
    log.push(format!("total {:?}", bank.total()));
    // The static also counts the transfers of this module's own tests, running in parallel.
    log.push(format!(
        "transfers counted: {}",
        *TRANSFERS.blocking_lock() >= 3
    ));
    let bank = Arc::try_unwrap(bank).ok().unwrap();
    let accounts = bank.close();
    log.push(format!("closed {accounts:?}"));
}

// ---------------------------------------------------------------------------------------------
// Mutex guards: map, try_map, mutex(), owned and mapped forms; get_mut, Default, From, Debug
// ---------------------------------------------------------------------------------------------

fn balance_of(g: MutexGuard<'_, Account>) -> MappedMutexGuard<'_, i64> {
    MutexGuard::map(g, |a| &mut a.balance)
}

fn owned_owner(g: OwnedMutexGuard<Account>) -> OwnedMappedMutexGuard<Account, String> {
    OwnedMutexGuard::map(g, |a| &mut a.owner)
}

fn mutex_guards(log: &mut Log) {
    let rt = runtime();
    rt.block_on(async {
        let m = Arc::new(Mutex::new(Account {
            owner: "ann".into(),
            balance: 5,
        }));
        log.push(format!("mutex debug {m:?}"));

        // MutexGuard::map / try_map / mutex.
        let g = m.lock().await;
        log.push(format!("guard debug {g:?}"));
        log.push(format!(
            "guard knows its mutex {}",
            std::ptr::eq(MutexGuard::mutex(&g), &*m)
        ));
        let mut bal = balance_of(g);
        *bal += 1;
        log.push(format!("mapped debug {bal:?}, display {bal}"));
        log.push(format!("mutex debug while mapped {m:?}"));
        // MappedMutexGuard::map / try_map.
        let bal = MappedMutexGuard::map(bal, |b| b);
        let bal = match MappedMutexGuard::try_map(bal, |_| None::<&mut u8>) {
            Ok(_) => unreachable!(),
            Err(bal) => bal,
        };
        let mut bal = MappedMutexGuard::try_map(bal, |b| (*b > 0).then_some(b)).unwrap();
        *bal *= 10;
        drop(bal);

        let g = m.lock().await;
        let g = match MutexGuard::try_map(g, |_| None::<&mut ()>) {
            Ok(_) => unreachable!(),
            Err(g) => g,
        };
        let mut owner = MutexGuard::try_map(g, |a| Some(&mut a.owner)).unwrap();
        owner.push_str("ie");
        drop(owner);

        // Owned guards.
        let og = m.clone().lock_owned().await;
        log.push(format!("owned guard debug {og:?}"));
        log.push(format!(
            "owned guard knows its mutex {}",
            Arc::ptr_eq(OwnedMutexGuard::mutex(&og), &m)
        ));
        log.push(format!("try_lock while owned {}", m.try_lock().is_ok()));
        let og = match OwnedMutexGuard::try_map(og, |_| None::<&mut ()>) {
            Ok(_) => unreachable!(),
            Err(og) => og,
        };
        let name = owned_owner(og);
        log.push(format!("owned mapped {name:?} / {name}"));
        let name = OwnedMappedMutexGuard::map(name, |s| s);
        let name = match OwnedMappedMutexGuard::try_map(name, |_| None::<&mut ()>) {
            Ok(_) => unreachable!(),
            Err(n) => n,
        };
        let mut first =
            OwnedMappedMutexGuard::try_map(name, |s| (!s.is_empty()).then_some(s)).unwrap();
        first.make_ascii_uppercase();
        // An owned guard moves into another task.
        tokio::spawn(async move { first.push('!') }).await.unwrap();
        log.push(format!("after owned forms {:?}", *m.lock().await));
        let og = m.clone().try_lock_owned().unwrap();
        let mut bal = OwnedMutexGuard::try_map(og, |a| Some(&mut a.balance)).unwrap();
        *bal += 1;
        drop(bal);
    });

    // get_mut, into_inner, Default, From.
    let mut m = Mutex::from(vec![1, 2]);
    m.get_mut().push(3);
    log.push(format!("get_mut/into_inner {:?}", m.into_inner()));
    let d: Mutex<BTreeMap<u8, u8>> = Mutex::default();
    log.push(format!("default {d:?}"));
    let from: Mutex<&str> = "x".into();
    log.push(format!("from {from:?}"));
}

fn mutex_blocking(log: &mut Log) {
    let m = Arc::new(Mutex::new(0u32));
    *m.blocking_lock() += 1;
    let mut og = m.clone().blocking_lock_owned();
    *og += 1;
    // A thread blocks on the mutex while this one holds it, then gets it once released.
    let (tx, rx) = mpsc::channel();
    let m2 = m.clone();
    let t = std::thread::spawn(move || {
        tx.send(()).unwrap();
        let mut g = m2.blocking_lock();
        *g *= 10;
        *g
    });
    rx.recv().unwrap();
    drop(og);
    log.push(format!(
        "blocking_lock in a thread saw {}",
        t.join().unwrap()
    ));
    let m3 = m.clone();
    let v = std::thread::spawn(move || *m3.blocking_lock_owned())
        .join()
        .unwrap();
    log.push(format!("blocking_lock_owned saw {v}"));
}

/// Unsized values behind the locks (`Arc<Mutex<[T]>>`, `Box<RwLock<dyn Trait>>`), as tokio
/// allows.
fn unsized_values(log: &mut Log) {
    let rt = runtime();
    rt.block_on(async {
        let m: Arc<Mutex<[u8]>> = Arc::new(Mutex::new([1, 2, 3]));
        m.lock().await[0] = 9;
        let og = m.clone().lock_owned().await;
        log.push(format!("unsized mutex {:?} {m:?}", &*og));
        drop(og);
        let first = MutexGuard::map(m.try_lock().unwrap(), |s| &mut s[..1]);
        log.push(format!("unsized mapped {:?}", &*first));
        drop(first);
        let l: Box<RwLock<dyn std::fmt::Debug + Send + Sync>> = Box::new(RwLock::new(("x", 1)));
        log.push(format!("unsized rwlock {:?} / {l:?}", &*l.read().await));
        let sl: Arc<RwLock<[u16]>> = Arc::new(RwLock::new([4, 5]));
        sl.write().await[1] = 6;
        log.push(format!(
            "slice rwlock {:?}",
            &*sl.clone().read_owned().await
        ));
    });
}

// ---------------------------------------------------------------------------------------------
// A config cache: RwLock
// ---------------------------------------------------------------------------------------------

static VERSION: RwLock<&str> = RwLock::const_new("v1");
static FEW_READERS: RwLock<u8> = RwLock::const_with_max_readers(7, 2);

pub struct Cache {
    map: Arc<RwLock<BTreeMap<String, String>>>,
}

impl Cache {
    pub fn new() -> Cache {
        Cache {
            map: Arc::new(RwLock::default()),
        }
    }

    pub async fn get(&self, k: &str) -> Option<String> {
        let g = self.map.read().await;
        RwLockReadGuard::try_map(g, |m| m.get(k))
            .ok()
            .map(|v| v.clone())
    }

    pub async fn insert(&self, k: &str, v: &str) -> Option<String> {
        self.map.write().await.insert(k.into(), v.into())
    }

    /// Inserts and returns a read guard on the new value (write, then downgrade_map).
    pub async fn insert_and_read(&self, k: &str, v: &str) -> RwLockReadGuard<'_, String> {
        let mut g = self.map.write().await;
        g.insert(k.into(), v.into());
        RwLockWriteGuard::downgrade_map(g, |m| &m[k])
    }

    /// The value for `k` held for reading from another task (`read_owned` + `map`).
    pub async fn pin(
        &self,
        k: &str,
    ) -> Option<OwnedRwLockReadGuard<BTreeMap<String, String>, String>> {
        let g = self.map.clone().read_owned().await;
        OwnedRwLockReadGuard::try_map(g, |m| m.get(k)).ok()
    }

    pub fn try_snapshot(&self) -> Result<BTreeMap<String, String>, TryLockError> {
        Ok(self.map.try_read()?.clone())
    }
}

fn cache(log: &mut Log) {
    let rt = runtime();
    rt.block_on(async {
        let c = Cache::new();
        log.push(format!("insert {:?}", c.insert("a", "1").await));
        log.push(format!("insert again {:?}", c.insert("a", "2").await));
        log.push(format!(
            "get {:?} {:?}",
            c.get("a").await,
            c.get("zz").await
        ));
        let r = c.insert_and_read("b", "3").await;
        log.push(format!(
            "downgraded read {r:?} / {r}; snapshot {:?}",
            c.try_snapshot()
        ));
        log.push(format!(
            "try_write while read {}",
            c.map.try_write().is_ok()
        ));
        drop(r);
        let pinned = c.pin("b").await.unwrap();
        let reader = tokio::spawn(async move { pinned.len() });
        log.push(format!("pinned in a task {}", reader.await.unwrap()));
        log.push(format!("missing pin {}", c.pin("nope").await.is_none()));
        let w = c.map.write().await;
        log.push(format!(
            "snapshot while written {:?}",
            c.try_snapshot().map_err(|e| e.to_string())
        ));
        log.push(format!("debug while written {:?}", c.map));
        drop(w);
        log.push(format!("debug {:?}", c.map));
        log.push(format!(
            "static {} {}",
            *VERSION.read().await,
            *FEW_READERS.read().await
        ));
        *VERSION.write().await = "v2";
        log.push(format!("static now {}", *VERSION.try_read().unwrap()));
        *VERSION.write().await = "v1";
        let (a, b) = (
            FEW_READERS.try_read().unwrap(),
            FEW_READERS.try_read().unwrap(),
        );
        log.push(format!(
            "third reader {} ({} {})",
            FEW_READERS.try_read().is_ok(),
            *a,
            *b
        ));
    });
}

fn second_of(g: RwLockWriteGuard<'_, (u8, u8)>) -> RwLockMappedWriteGuard<'_, u8> {
    RwLockWriteGuard::map(g, |t| &mut t.1)
}

fn rwlock_guards(log: &mut Log) {
    let rt = runtime();
    rt.block_on(async {
        let l = RwLock::new((1u8, 2u8));
        // Write guard: map, try_map, into_mapped, mapped map/try_map.
        let mut second = second_of(l.write().await);
        *second += 10;
        log.push(format!("mapped write {second:?} / {second}"));
        let second = RwLockMappedWriteGuard::map(second, |x| x);
        let second = match RwLockMappedWriteGuard::try_map(second, |_| None::<&mut ()>) {
            Ok(_) => unreachable!(),
            Err(s) => s,
        };
        let mut second =
            RwLockMappedWriteGuard::try_map(second, |x| (*x > 0).then_some(x)).unwrap();
        *second += 1;
        log.push(format!(
            "try_read while mapped write {}",
            l.try_read().is_ok()
        ));
        drop(second);
        let g = l.write().await;
        let g = match RwLockWriteGuard::try_map(g, |_| None::<&mut ()>) {
            Ok(_) => unreachable!(),
            Err(g) => g,
        };
        let mut first = RwLockWriteGuard::try_map(g, |t| Some(&mut t.0)).unwrap();
        *first = 5;
        drop(first);
        let mut whole = RwLockWriteGuard::into_mapped(l.write().await);
        whole.0 += 1;
        log.push(format!("into_mapped {whole:?}"));
        drop(whole);
        // downgrade, downgrade_map, try_downgrade_map.
        let g = l.write().await;
        log.push(format!(
            "write guard debug {g:?}, try_write {}",
            l.try_write().is_ok()
        ));
        drop(g);
        let g = l.write().await;
        let r = g.downgrade();
        log.push(format!(
            "downgrade {r:?}, another read {}",
            l.try_read().is_ok()
        ));
        drop(r);
        let g = l.write().await;
        let g = match RwLockWriteGuard::try_downgrade_map(g, |_| None::<&u8>) {
            Ok(_) => unreachable!(),
            Err(g) => g,
        };
        let r = RwLockWriteGuard::try_downgrade_map(g, |t| Some(&t.1)).unwrap();
        log.push(format!(
            "try_downgrade_map {r}, try_write {}",
            l.try_write().is_ok()
        ));
        drop(r);
        // Read guard: map, try_map.
        let r = l.read().await;
        log.push(format!("read guard {r:?}"));
        let r = match RwLockReadGuard::try_map(r, |_| None::<&()>) {
            Ok(_) => unreachable!(),
            Err(r) => r,
        };
        let r = RwLockReadGuard::map(r, |t| &t.0);
        let r = RwLockReadGuard::try_map(r, |x| (*x > 0).then_some(x)).unwrap();
        log.push(format!("read mapped {r} / {r:?}"));
        drop(r);
        let l2 = RwLock::with_max_readers(vec![1], 1);
        let r = l2.read().await;
        log.push(format!(
            "max_readers 1: second read {}",
            l2.try_read().is_ok()
        ));
        drop(r);
        log.push(format!("debug {l:?} {l2:?}"));
    });
    let mut l = RwLock::from(String::from("a"));
    l.get_mut().push('b');
    log.push(format!("get_mut/into_inner {}", l.into_inner()));
    let d: RwLock<Vec<u8>> = RwLock::default();
    log.push(format!("default {d:?}"));
    let from: RwLock<u8> = 3.into();
    log.push(format!("from {from:?}"));
}

fn rwlock_owned_guards(log: &mut Log) {
    let rt = runtime();
    rt.block_on(async {
        let l = Arc::new(RwLock::new((1u8, vec![2u8])));
        // Owned write guard: map, try_map, into_mapped, rwlock, mapped map/try_map/rwlock.
        let g = l.clone().write_owned().await;
        log.push(format!(
            "owned write {g:?}, knows its lock {}",
            Arc::ptr_eq(OwnedRwLockWriteGuard::rwlock(&g), &l)
        ));
        let g = match OwnedRwLockWriteGuard::try_map(g, |_| None::<&mut ()>) {
            Ok(_) => unreachable!(),
            Err(g) => g,
        };
        let mut v: OwnedRwLockMappedWriteGuard<(u8, Vec<u8>), Vec<u8>> =
            OwnedRwLockWriteGuard::try_map(g, |t| Some(&mut t.1)).unwrap();
        v.push(3);
        log.push(format!(
            "owned mapped {v:?}, knows its lock {}",
            Arc::ptr_eq(OwnedRwLockMappedWriteGuard::rwlock(&v), &l)
        ));
        let v = OwnedRwLockMappedWriteGuard::map(v, |v| v);
        let v = match OwnedRwLockMappedWriteGuard::try_map(v, |_| None::<&mut ()>) {
            Ok(_) => unreachable!(),
            Err(v) => v,
        };
        let mut last = OwnedRwLockMappedWriteGuard::try_map(v, |v| v.last_mut()).unwrap();
        *last += 1;
        // Owned guards move to another task.
        tokio::spawn(async move { *last += 1 }).await.unwrap();
        let mut first = OwnedRwLockWriteGuard::map(l.clone().write_owned().await, |t| &mut t.0);
        *first += 1;
        log.push(format!("owned map {first}"));
        drop(first);
        let whole = OwnedRwLockWriteGuard::into_mapped(l.clone().try_write_owned().unwrap());
        log.push(format!("owned into_mapped {whole:?}"));
        drop(whole);
        // Owned downgrade forms.
        let r = l.clone().write_owned().await.downgrade();
        log.push(format!(
            "owned downgrade {r:?}, read {} write {}",
            l.try_read().is_ok(),
            l.try_write().is_ok()
        ));
        drop(r);
        let r = OwnedRwLockWriteGuard::downgrade_map(l.clone().write_owned().await, |t| &t.0);
        log.push(format!("owned downgrade_map {r}"));
        drop(r);
        let g = l.clone().write_owned().await;
        let g = match OwnedRwLockWriteGuard::try_downgrade_map(g, |_| None::<&()>) {
            Ok(_) => unreachable!(),
            Err(g) => g,
        };
        let r = OwnedRwLockWriteGuard::try_downgrade_map(g, |t| t.1.first()).unwrap();
        log.push(format!("owned try_downgrade_map {r}"));
        drop(r);
        // Owned read guard: map, try_map, rwlock.
        let r = l.clone().read_owned().await;
        log.push(format!(
            "owned read knows its lock {}",
            Arc::ptr_eq(OwnedRwLockReadGuard::rwlock(&r), &l)
        ));
        let r = match OwnedRwLockReadGuard::try_map(r, |_| None::<&()>) {
            Ok(_) => unreachable!(),
            Err(r) => r,
        };
        let r = OwnedRwLockReadGuard::map(r, |t| &t.1);
        let r = OwnedRwLockReadGuard::try_map(r, |v| v.get(1)).unwrap();
        log.push(format!("owned read mapped {r} / {r:?}"));
        let r2 = l.clone().try_read_owned().unwrap();
        log.push(format!(
            "try_write_owned while read {:?}",
            l.clone()
                .try_write_owned()
                .map(|_| ())
                .map_err(|e| e.to_string())
        ));
        drop((r, r2));
        log.push(format!("final {:?}", *l.read().await));
    });
}

fn rwlock_blocking(log: &mut Log) {
    let l = Arc::new(RwLock::new(1u32));
    *l.blocking_write() += 1;
    let r = l.blocking_read();
    let (tx, rx) = mpsc::channel();
    let l2 = l.clone();
    let t = std::thread::spawn(move || {
        tx.send(()).unwrap();
        let mut w = l2.blocking_write();
        *w *= 10;
        *w
    });
    rx.recv().unwrap();
    log.push(format!("blocking_read {}", *r));
    drop(r);
    log.push(format!(
        "blocking_write in a thread saw {}",
        t.join().unwrap()
    ));
}

// ---------------------------------------------------------------------------------------------
// A connection pool: Semaphore
// ---------------------------------------------------------------------------------------------

static GLOBAL_SLOTS: Semaphore = Semaphore::const_new(2);

pub struct Pool {
    slots: Arc<Semaphore>,
}

pub struct Conn {
    _permit: OwnedSemaphorePermit,
    pub id: usize,
}

impl Pool {
    pub fn new(n: usize) -> Pool {
        Pool {
            slots: Arc::new(Semaphore::new(n)),
        }
    }

    pub async fn checkout(&self, id: usize) -> Result<Conn, AcquireError> {
        let permit = self.slots.clone().acquire_owned().await?;
        Ok(Conn {
            _permit: permit,
            id,
        })
    }

    pub fn try_checkout(&self, id: usize) -> Result<Conn, TryAcquireError> {
        let permit = self.slots.clone().try_acquire_owned()?;
        Ok(Conn {
            _permit: permit,
            id,
        })
    }

    /// A batch job needs `n` connections at once.
    pub async fn batch(&self, n: u32) -> Result<SemaphorePermit<'_>, AcquireError> {
        self.slots.acquire_many(n).await
    }

    pub fn shutdown(&self) {
        self.slots.close();
    }
}

fn pool(log: &mut Log) {
    let rt = runtime();
    rt.block_on(async {
        let pool = Arc::new(Pool::new(2));
        log.push(format!("pool {:?}", pool.slots));
        let c1 = pool.checkout(1).await.unwrap();
        let c2 = pool.try_checkout(2).unwrap();
        log.push(format!("full: {:?}", pool.try_checkout(3).err()));
        // Four workers queue for a connection; they are served in order as connections
        // come back.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut workers = Vec::new();
        for id in 10..14 {
            let (pool, tx) = (pool.clone(), tx.clone());
            workers.push(tokio::spawn(async move {
                let c = pool.checkout(id).await.unwrap();
                tx.send(c.id).unwrap();
            }));
            tokio::task::yield_now().await;
        }
        drop((c1, c2));
        for w in workers {
            w.await.unwrap();
        }
        drop(tx);
        let mut order = Vec::new();
        while let Some(id) = rx.recv().await {
            order.push(id);
        }
        log.push(format!("served {order:?}"));
        let b = pool.batch(2).await.unwrap();
        log.push(format!(
            "batch {b:?}, available {}",
            pool.slots.available_permits()
        ));
        drop(b);
        let single = pool.slots.acquire().await.unwrap();
        log.push(format!(
            "single {}, try_acquire {:?}",
            single.num_permits(),
            pool.slots.try_acquire().map(|p| p.num_permits())
        ));
        drop(single);
        let many = pool.slots.clone().acquire_many_owned(2).await.unwrap();
        let waiting = {
            let pool = pool.clone();
            tokio::spawn(async move { pool.checkout(99).await.map(|c| c.id) })
        };
        tokio::task::yield_now().await;
        pool.shutdown();
        log.push(format!(
            "closed {}, waiter got {:?}",
            pool.slots.is_closed(),
            waiting.await.unwrap()
        ));
        log.push(format!(
            "checkout after close {:?}",
            pool.checkout(100).await.map(|c| c.id)
        ));
        log.push(format!(
            "try_checkout after close {:?}",
            pool.try_checkout(101).map(|c| c.id)
        ));
        drop(many);
        log.push(format!(
            "available after close {}",
            pool.slots.available_permits()
        ));
        let g1 = GLOBAL_SLOTS.acquire().await.unwrap();
        let g2 = GLOBAL_SLOTS.try_acquire().unwrap();
        log.push(format!(
            "static full {:?}",
            GLOBAL_SLOTS.try_acquire().err()
        ));
        drop((g1, g2));
    });
}

fn permits(log: &mut Log) {
    let sem = Arc::new(Semaphore::new(6));
    log.push(format!("MAX_PERMITS {}", Semaphore::MAX_PERMITS));
    let mut p = sem.try_acquire_many(4).unwrap();
    let q = p.split(1).unwrap();
    log.push(format!(
        "split {} {}, too many {:?}",
        p.num_permits(),
        q.num_permits(),
        p.split(9).map(|x| x.num_permits())
    ));
    log.push(format!(
        "permit semaphore is sem {}",
        std::ptr::eq(q.semaphore(), &*sem)
    ));
    p.merge(q);
    log.push(format!("merged {} {p:?}", p.num_permits()));
    p.forget();
    log.push(format!("forgot, available {}", sem.available_permits()));
    sem.add_permits(4);
    log.push(format!("added back, available {}", sem.available_permits()));
    log.push(format!(
        "forget_permits {} then available {}",
        sem.forget_permits(3),
        sem.available_permits()
    ));
    let mut o = sem.clone().try_acquire_many_owned(2).unwrap();
    let o2 = o.split(1).unwrap();
    log.push(format!(
        "owned {o:?} same sem {}",
        Arc::ptr_eq(o.semaphore(), &sem)
    ));
    o.merge(o2);
    let o3 = sem.clone().try_acquire_owned().unwrap();
    o.merge(o3);
    log.push(format!(
        "owned merged {} available {}",
        o.num_permits(),
        sem.available_permits()
    ));
    o.forget();
    log.push(format!(
        "owned forgot, available {}",
        sem.available_permits()
    ));
    sem.add_permits(3);
    log.push(format!("final available {}", sem.available_permits()));
}

fn semaphore_blocking(log: &mut Log) {
    let sem = Arc::new(Semaphore::new(3));
    let a = sem.blocking_acquire().unwrap();
    let b = sem.blocking_acquire_many(2).unwrap();
    log.push(format!(
        "blocking {} {}, available {}",
        a.num_permits(),
        b.num_permits(),
        sem.available_permits()
    ));
    let (tx, rx) = mpsc::channel();
    let s2 = sem.clone();
    let t = std::thread::spawn(move || {
        tx.send(()).unwrap();
        let p = s2.clone().blocking_acquire_many_owned(2).unwrap();
        let q = s2.blocking_acquire_owned().unwrap();
        p.num_permits() + q.num_permits()
    });
    rx.recv().unwrap();
    drop((a, b));
    log.push(format!(
        "blocking owned in a thread got {}",
        t.join().unwrap()
    ));
    sem.close();
    log.push(format!(
        "blocking after close {:?} {:?}",
        sem.blocking_acquire().err(),
        sem.clone().blocking_acquire_owned().err()
    ));
}

// ---------------------------------------------------------------------------------------------
// Errors and panics
// ---------------------------------------------------------------------------------------------

fn describe(e: &dyn Error) -> String {
    format!("{e} (source {:?})", e.source().map(|s| s.to_string()))
}

fn errors(log: &mut Log) {
    let m = Mutex::new(());
    let _g = m.try_lock().unwrap();
    let e: TryLockError = m.try_lock().unwrap_err();
    log.push(format!("TryLockError {e:?} / {}", describe(&e)));
    let boxed: Box<dyn Error + Send + Sync> = Box::new(e);
    log.push(format!("boxed {boxed}"));
    let sem = Semaphore::new(0);
    let e = sem.try_acquire().unwrap_err();
    log.push(format!(
        "TryAcquireError {e:?} / {} / eq {}",
        describe(&e),
        e == TryAcquireError::NoPermits
    ));
    sem.close();
    let e = sem.try_acquire().unwrap_err();
    log.push(format!(
        "TryAcquireError {e:?} / {} / closed {}",
        describe(&e),
        matches!(e, TryAcquireError::Closed)
    ));
    let e: AcquireError = runtime().block_on(sem.acquire()).unwrap_err();
    log.push(format!("AcquireError {e:?} / {}", describe(&e)));
}

fn panicked<R>(f: impl FnOnce() -> R) -> bool {
    catch_unwind(AssertUnwindSafe(f)).is_err()
}

fn panics(log: &mut Log) {
    let rt = runtime();
    let m = Mutex::new(1);
    let l = RwLock::new(1);
    let s = Arc::new(Semaphore::new(1));
    log.push(format!(
        "blocking inside a runtime panics: {} {} {} {} {}",
        panicked(|| rt.block_on(async { drop(m.blocking_lock()) })),
        panicked(|| rt.block_on(async { drop(l.blocking_read()) })),
        panicked(|| rt.block_on(async { drop(l.blocking_write()) })),
        panicked(|| rt.block_on(async { drop(s.blocking_acquire()) })),
        panicked(|| rt.block_on(async { drop(s.clone().blocking_acquire_many_owned(1)) })),
    ));
    log.push(format!(
        "bad sizes panic: {} {} {}",
        panicked(|| RwLock::with_max_readers((), 0)),
        panicked(|| RwLock::with_max_readers((), u32::MAX)),
        panicked(|| Semaphore::new(usize::MAX)),
    ));
    let a = Semaphore::new(1);
    let b = Semaphore::new(1);
    log.push(format!(
        "merging permits of two semaphores panics: {}",
        panicked(|| {
            let mut p = a.try_acquire().unwrap();
            p.merge(b.try_acquire().unwrap());
        })
    ));
    log.push(format!(
        "still usable: {} {} {}",
        m.try_lock().is_ok(),
        l.try_write().is_ok(),
        s.available_permits()
    ));
}

// ---------------------------------------------------------------------------------------------
// The program's own tests: they pass against either import.
// ---------------------------------------------------------------------------------------------

mod tests {
    use super::*;

    #[tokio::test]
    async fn transfers_keep_the_total() {
        let bank = Arc::new(Bank::new(&[10, 10, 10, 10]));
        let mut tasks = Vec::new();
        for i in 0..40 {
            let bank = bank.clone();
            tasks.push(tokio::spawn(async move {
                bank.transfer(i % 4, (i + 1) % 4, 3).await
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(bank.total(), Some(40));
    }

    #[tokio::test]
    async fn cache_reads_what_was_written() {
        let c = Cache::new();
        assert_eq!(c.insert("k", "v").await, None);
        assert_eq!(c.get("k").await.as_deref(), Some("v"));
        assert_eq!(&*c.insert_and_read("k", "w").await, "w");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn pool_never_exceeds_its_size() {
        let pool = Arc::new(Pool::new(3));
        let busy = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for id in 0..50 {
            let (pool, busy) = (pool.clone(), busy.clone());
            tasks.push(tokio::spawn(async move {
                let _c = pool.checkout(id).await.unwrap();
                let now = busy.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                assert!(now <= 3, "{now} connections at once");
                tokio::task::yield_now().await;
                busy.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(pool.slots.available_permits(), 3);
    }

    #[test]
    fn the_transcript_is_complete() {
        let log = run();
        assert!(log.len() > 80, "{log:#?}");
    }
}
