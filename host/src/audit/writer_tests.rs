//! The writer's group commit: every line written once, in one chain, whoever leads; the lead
//! handed on after [`ROUNDS`] batches; a line whose call stopped waiting written all the same.

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

use super::{lock, Done, Inline, Waiting, Writer, ROUNDS};
use crate::audit::chain::{self, Head};
use crate::audit::{sink, tests::entry, verify, AuditLog, Job};

const KEY: [u8; 32] = [7; 32];

/// A sink that keeps what it is given and, on each of its first `inject` writes, has one more
/// call queue a line while the leader writes (as calls arriving meanwhile do).
struct Sink {
    bytes: Arc<Mutex<Vec<u8>>>,
    inline: Arc<OnceLock<Arc<Inline>>>,
    inject: usize,
    waiting: Arc<Mutex<Vec<tokio::sync::oneshot::Receiver<Done>>>>,
    give_up: Arc<Mutex<Option<usize>>>,
    made: usize,
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.bytes.lock().unwrap().extend_from_slice(buf);
        if self.inject > 0 {
            self.inject -= 1;
            let n = self.made;
            self.made += 1;
            let (done, mut told) = tokio::sync::oneshot::channel();
            if *self.give_up.lock().unwrap() == Some(n) {
                told.close();
            }
            let job = Job {
                line: format!("{{\"n\":\"late{n}\"}}").into_bytes(),
                done,
            };
            assert!(self.inline.get().unwrap().submit(job, 1024).is_ok());
            self.waiting.lock().unwrap().push(told);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

struct Fixture {
    inline: Arc<Inline>,
    bytes: Arc<Mutex<Vec<u8>>>,
    waiting: Arc<Mutex<Vec<tokio::sync::oneshot::Receiver<Done>>>>,
    give_up: Arc<Mutex<Option<usize>>>,
}

fn fixture(inject: usize) -> Fixture {
    let bytes = Arc::new(Mutex::new(Vec::new()));
    let cell = Arc::new(OnceLock::new());
    let waiting = Arc::new(Mutex::new(Vec::new()));
    let give_up = Arc::new(Mutex::new(None));
    let (heads, _) = tokio::sync::watch::channel(None);
    let inline = Arc::new(Inline::new(Writer {
        out: Box::new(Sink {
            bytes: bytes.clone(),
            inline: cell.clone(),
            inject,
            waiting: waiting.clone(),
            give_up: give_up.clone(),
            made: 0,
        }),
        head: Head::start(),
        head_file: None,
        chain: None,
        key: KEY,
        heads,
    }));
    cell.set(inline.clone()).ok().unwrap();
    Fixture {
        inline,
        bytes,
        waiting,
        give_up,
    }
}

fn job(text: &str) -> (Job, tokio::sync::oneshot::Receiver<Done>) {
    let (done, told) = tokio::sync::oneshot::channel();
    let line = format!("{{\"n\":\"{text}\"}}").into_bytes();
    (Job { line, done }, told)
}

/// The `n` of each line written, after checking each is sealed and follows the one before.
fn written(bytes: &[u8]) -> Vec<String> {
    let mut prev = chain::GENESIS.to_string();
    let mut out = Vec::new();
    for (i, line) in bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .enumerate()
    {
        let sealed = chain::open(&KEY, line).unwrap();
        assert_eq!(sealed.seq, i as u64 + 1);
        assert_eq!(sealed.prev, prev, "line {}", i + 1);
        prev = sealed.seal;
        let v: serde_json::Value = serde_json::from_slice(line).unwrap();
        out.push(v["n"].as_str().unwrap().to_string());
    }
    out
}

/// The lines a leader writes for its own line `first` and the late ones numbered `late`.
fn first_then(late: impl Iterator<Item = usize>) -> Vec<String> {
    std::iter::once("first".to_string())
        .chain(late.map(|n| format!("late{n}")))
        .collect()
}

fn told(rx: &mut tokio::sync::oneshot::Receiver<Done>) -> Option<Result<(), String>> {
    match rx.try_recv() {
        Ok(Done::Written(r)) => Some(r),
        Ok(Done::Lead(_)) => panic!("a lead where a result was due"),
        Err(_) => None,
    }
}

#[test]
fn a_call_alone_writes_its_own_line_and_is_told_at_once() {
    // Arrange
    let f = fixture(0);
    let (j, mut rx) = job("a");

    // Act
    f.inline.submit(j, 1024).ok().unwrap();

    // Assert
    assert_eq!(told(&mut rx), Some(Ok(())));
    assert_eq!(written(&f.bytes.lock().unwrap()), ["a"]);
    assert!(!lock(&f.inline.pending).leading);
}

#[test]
fn lines_queued_while_the_leader_writes_are_written_by_it_then_the_lead_is_handed_on() {
    // Arrange: each of the leader's writes sees one more call queue a line, past ROUNDS.
    let f = fixture(ROUNDS + 2);
    let (j, mut rx) = job("first");

    // Act
    f.inline.submit(j, 1024).ok().unwrap();

    // Assert: the leader wrote ROUNDS batches (its own line and ROUNDS - 1 late ones), then
    // handed the lead to the oldest call waiting, with its line.
    assert_eq!(told(&mut rx), Some(Ok(())));
    let mut waiting = std::mem::take(&mut *f.waiting.lock().unwrap());
    assert_eq!(waiting.len(), ROUNDS);
    for rx in waiting.iter_mut().take(ROUNDS - 1) {
        assert_eq!(told(rx), Some(Ok(())));
    }
    let Ok(Done::Lead(line)) = waiting[ROUNDS - 1].try_recv() else {
        panic!("the oldest waiting call is handed the lead");
    };
    assert!(
        lock(&f.inline.pending).leading,
        "the lead is held while handed on"
    );
    let mut expected = first_then(0..ROUNDS - 1);
    assert_eq!(written(&f.bytes.lock().unwrap()), expected);

    // Act: the new leader leads with its own line first (its write queues the last late one).
    let (done, mut again) = tokio::sync::oneshot::channel();
    f.inline.lead_with(line, done);

    // Assert: every line once, in order, in one chain; nobody leads any more.
    assert_eq!(told(&mut again), Some(Ok(())));
    expected.extend((ROUNDS - 1..=ROUNDS + 1).map(|n| format!("late{n}")));
    assert_eq!(written(&f.bytes.lock().unwrap()), expected);
    for rx in f.waiting.lock().unwrap().iter_mut() {
        assert_eq!(told(rx), Some(Ok(())));
    }
    assert!(!lock(&f.inline.pending).leading);
}

#[test]
fn a_line_whose_call_stopped_waiting_is_written_and_takes_no_lead() {
    // Arrange: the oldest call waiting at the hand-off has stopped waiting (past WRITE_WAIT).
    let f = fixture(ROUNDS + 1);
    *f.give_up.lock().unwrap() = Some(ROUNDS - 1);
    let (j, mut rx) = job("first");

    // Act
    f.inline.submit(j, 1024).ok().unwrap();

    // Assert: the leader kept the lead and wrote every line, that one included, in order.
    assert_eq!(told(&mut rx), Some(Ok(())));
    let expected = first_then(0..=ROUNDS);
    assert_eq!(written(&f.bytes.lock().unwrap()), expected);
    for (n, rx) in f.waiting.lock().unwrap().iter_mut().enumerate() {
        if n != ROUNDS - 1 {
            assert_eq!(told(rx), Some(Ok(())), "late{n}");
        }
    }
    assert!(!lock(&f.inline.pending).leading);
}

#[test]
fn a_call_handed_the_lead_and_cancelled_leads_as_it_is_dropped() {
    // Arrange: the lead handed to the oldest waiting call, whose request is then cancelled.
    let f = fixture(ROUNDS + 1);
    let (j, _rx) = job("first");
    f.inline.submit(j, 1024).ok().unwrap();
    let handed = f.waiting.lock().unwrap().remove(ROUNDS - 1);
    let waiting = Waiting::new(handed, Some(&f.inline));

    // Act
    drop(waiting);

    // Assert: its line and those behind it written, in order; nobody leads.
    let expected = first_then(0..=ROUNDS);
    assert_eq!(written(&f.bytes.lock().unwrap()), expected);
    for rx in f.waiting.lock().unwrap().iter_mut() {
        assert_eq!(told(rx), Some(Ok(())));
    }
    assert!(!lock(&f.inline.pending).leading);
}

#[tokio::test]
async fn a_waiting_call_handed_the_lead_leads_and_is_told_of_its_line() {
    // Arrange
    let f = fixture(ROUNDS);
    let (j, _rx) = job("first");
    f.inline.submit(j, 1024).ok().unwrap();
    let handed = f.waiting.lock().unwrap().remove(ROUNDS - 1);
    let mut waiting = Waiting::new(handed, Some(&f.inline));

    // Act
    let told = waiting.written(tokio::time::Instant::now()).await;

    // Assert
    assert_eq!(told, Some(Ok(())));
    assert_eq!(written(&f.bytes.lock().unwrap()).len(), ROUNDS + 1);
    assert!(!lock(&f.inline.pending).leading);
}

#[test]
fn a_full_queue_gives_the_line_back() {
    // Arrange: a leader is writing (set by hand), one line already queued.
    let f = fixture(0);
    lock(&f.inline.pending).leading = true;
    let (a, _a) = job("a");
    f.inline.submit(a, 1).ok().unwrap();

    // Act
    let (b, _b) = job("b");
    let refused = f.inline.submit(b, 1);

    // Assert
    assert!(refused.is_err());
    assert_eq!(lock(&f.inline.pending).jobs.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_calls_at_once_write_every_line_once_in_one_chain() {
    // Arrange
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = Arc::new(AuditLog::open(path.to_str().unwrap(), &dir.path().join("k")).unwrap());

    // Act: 400 calls from 2 threads at once.
    let tasks: Vec<_> = (0..400)
        .map(|i| {
            let log = log.clone();
            tokio::spawn(async move {
                let entry = entry(i);
                log.record(&entry).await
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().unwrap();
    }

    // Assert: 400 lines, one chain, each call's line once; the head file names the last.
    let key = sink::audit_key(&dir.path().join("k")).unwrap();
    let verified = verify::verify(&key, std::slice::from_ref(&path)).unwrap();
    assert_eq!(verified.lines, 400);
    assert!(verified.head_checked);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut ids: Vec<u64> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["callId"]
                .as_u64()
                .unwrap()
        })
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..400).collect::<Vec<_>>());
}

#[test]
fn a_lead_taken_and_dropped_unused_writes_its_line_and_those_queued_behind_it() {
    // Arrange: a call takes the lead; another queues its line behind it.
    let f = fixture(0);
    let (a, mut a_rx) = job("a");
    let lead = f
        .inline
        .enqueue(a, 1024)
        .ok()
        .unwrap()
        .expect("no one leads yet");
    let (b, mut b_rx) = job("b");
    assert!(
        f.inline.enqueue(b, 1024).ok().unwrap().is_none(),
        "b queues"
    );

    // Act: the call holding the lead is cancelled before it writes.
    drop(lead);

    // Assert: both lines written, in order, and told; nobody leads.
    assert_eq!(written(&f.bytes.lock().unwrap()), ["a", "b"]);
    assert_eq!(told(&mut a_rx), Some(Ok(())));
    assert_eq!(told(&mut b_rx), Some(Ok(())));
    assert!(!lock(&f.inline.pending).leading);
}

/// A sink that records how many lines each write carried.
struct Counted(Arc<Mutex<Vec<usize>>>);

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let lines = buf.iter().filter(|b| **b == b'\n').count();
        self.0.lock().unwrap().push(lines);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// An audit log written in the calls' tasks to a [`Counted`] sink, and that sink's record.
fn counted_log() -> (Arc<AuditLog>, Arc<Mutex<Vec<usize>>>) {
    let writes = Arc::new(Mutex::new(Vec::new()));
    let (heads, _) = tokio::sync::watch::channel(None);
    let inline = Inline::new(Writer {
        out: Box::new(Counted(writes.clone())),
        head: Head::start(),
        head_file: None,
        chain: None,
        key: KEY,
        heads,
    });
    let log = AuditLog {
        writer: Some(super::super::Route::Inline(inline)),
        heads: None,
        under_way: Default::default(),
    };
    (Arc::new(log), writes)
}

/// Runs `calls` calls' `record` at once on one thread, `under_way` of them counted under way.
fn record_together(calls: u64, under_way: u64) -> Vec<usize> {
    let (log, writes) = counted_log();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let guards: Vec<_> = (0..under_way).map(|_| log.call_begins()).collect();
        let tasks: Vec<_> = (0..calls)
            .map(|i| {
                let log = log.clone();
                tokio::spawn(async move { log.record(&entry(i)).await })
            })
            .collect();
        for t in tasks {
            t.await.unwrap().unwrap();
        }
        drop(guards);
    });
    let w = writes.lock().unwrap().clone();
    w
}

#[test]
fn calls_under_way_together_share_one_write() {
    // Arrange / Act: eight calls under way reach their lines on one worker.
    let writes = record_together(8, 8);

    // Assert: the first to lead let the seven others queue, then wrote all eight at once.
    assert_eq!(writes, [8]);
}

#[test]
fn a_call_alone_under_way_writes_at_once() {
    // Arrange / Act: two lines, but only one call counted under way (a lone call's line and,
    // say, a REST route's).
    let writes = record_together(2, 1);

    // Assert: no yield for company: each line its own write.
    assert_eq!(writes, [1, 1]);
}
