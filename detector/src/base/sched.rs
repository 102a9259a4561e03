//! What the OS did to a thread: how long it sat runnable but not running, from Linux's
//! `/proc/self/task/<tid>/schedstat` (its second field, run-queue wait in nanoseconds).
//!
//! The worker-stall rule subtracts that from a stall before judging it (see
//! `rules::blocking_in_async`): on a machine loaded past its cores, the OS can deschedule a
//! lock's holder inside a microsecond section, or wake its waiter late, for longer than the
//! 10 ms test threshold, and such a stall is the machine's, not the program's. Elsewhere, and
//! where the file cannot be read, nothing is known and nothing is subtracted.

/// This thread's OS id (Linux), or 0 where there is none to read statistics by.
pub(crate) fn current_tid() -> i32 {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid has no preconditions and cannot fail.
        unsafe { libc::gettid() }
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}

/// Nanoseconds thread `tid` of this process has spent runnable but waiting for a CPU, if the
/// OS tells. Reads a small file: for the slow path of a blocking wait on a worker only.
pub(crate) fn runqueue_ns(tid: i32) -> Option<u64> {
    if tid <= 0 || !cfg!(target_os = "linux") {
        return None;
    }
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    parse(&text)
}

/// The run-queue wait of a `schedstat` line: `<on cpu ns> <run-queue ns> <timeslices>`.
fn parse(text: &str) -> Option<u64> {
    text.split_ascii_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_second_field_is_the_run_queue_wait() {
        assert_eq!(parse("1019070 6011963 2\n"), Some(6_011_963));
        assert_eq!(parse("1019070"), None);
        assert_eq!(parse("1 x 2"), None);
        assert_eq!(runqueue_ns(0), None);
        assert_eq!(runqueue_ns(-1), None);
    }

    /// On Linux this thread's own statistics can be read, and only grow.
    #[cfg(target_os = "linux")]
    #[test]
    fn this_threads_run_queue_wait_is_known() {
        let me = current_tid();
        assert!(me > 0);
        let a = runqueue_ns(me).expect("schedstat on Linux");
        std::thread::yield_now();
        assert!(runqueue_ns(me).expect("schedstat on Linux") >= a);
    }
}
