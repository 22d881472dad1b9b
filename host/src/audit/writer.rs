//! The audit writer: seals the lines it is handed, in order, and writes them with a group
//! commit: the lines queued while one write was under way are sealed and written together,
//! with one write (and one head), and each call is told only once its line is written.
//!
//! Two ways to run it, chosen by the sink (`Opened::may_block`):
//! - **in the calls' own tasks** ([`Inline`]), for a regular file or `/dev/null`, whose writes
//!   go to the page cache, and a pipe (`sink::Pipe`, waited on off the async worker when its
//!   reader is behind): the first call to find the writer idle leads, writing its line and
//!   every line queued meanwhile, and the calls that queued theirs wait for it. No thread
//!   hand-off and no wake-up for a call alone: the writes nginx makes of its access log from
//!   its event loop, for the same reason. A leader writes at most [`ROUNDS`] batches, then
//!   hands the lead to the oldest call still waiting. The lead is taken first and exercised
//!   after ([`Lead`]): when other calls are under way, the call that took it yields once in
//!   between (`AuditLog::record`), so that those ready on its worker queue their lines and
//!   one write carries them all (PostgreSQL's `commit_delay` with `commit_siblings`, without
//!   its timer: the yield lasts one pass of the worker's ready calls).
//! - **on a thread of its own** ([`run_thread`]), for a terminal or a socket, which may block
//!   for as long as a reader pleases: calls then wait without holding a request thread.

use std::io::Write;
use std::sync::mpsc::Receiver;
use std::sync::Mutex;

use super::chain::{self, Head};
use super::{sink, Anchor, Job};

/// Lines written together at most.
const BATCH: usize = 256;
/// Batches a leader writes before it hands the lead on: a call's answer waits for its own
/// line, not for everyone else's.
const ROUNDS: usize = 4;

/// What a waiting call is told.
pub(crate) enum Done {
    /// Its line was written (or the write failed, with why).
    Written(Result<(), String>),
    /// Its line was not written yet: the call leads now, its own line first.
    Lead(Vec<u8>),
}

/// The writer's state: where lines go, the chain's head and name, its key, and where each
/// head is published (for the anchors).
pub(super) struct Writer {
    pub(super) out: Box<dyn Write + Send>,
    pub(super) head: Head,
    pub(super) head_file: Option<std::fs::File>,
    pub(super) chain: Option<String>,
    pub(super) key: [u8; 32],
    pub(super) heads: tokio::sync::watch::Sender<Option<Anchor>>,
}

/// Writes the lines `jobs` brings, on the calling thread, until every sender is gone.
pub(super) fn run_thread(mut writer: Writer, jobs: Receiver<Job>) {
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        writer.commit(batch);
    }
}

/// The writer run in the calls' own tasks: the lines waiting, whether a call leads, and the
/// writer (locked by the leader alone).
pub(super) struct Inline {
    pending: Mutex<Pending>,
    writer: Mutex<Writer>,
}

/// Lines queued for the leader, and whether there is one.
#[derive(Default)]
struct Pending {
    jobs: Vec<Job>,
    leading: bool,
}

impl Inline {
    pub(super) fn new(writer: Writer) -> Inline {
        Inline {
            pending: Mutex::new(Pending::default()),
            writer: Mutex::new(writer),
        }
    }

    /// Queues `job`, or, when no call leads, leads at once: writes it and what is queued
    /// behind it. `Err` gives the job back when `limit` lines are already waiting.
    #[cfg(test)]
    pub(super) fn submit(&self, job: Job, limit: usize) -> Result<(), Job> {
        if let Some(lead) = self.enqueue(job, limit)? {
            lead.write();
        }
        Ok(())
    }

    /// Queues `job` (`None`), or, when no call leads, takes the lead with it: the [`Lead`]
    /// writes it, and every line queued until then, when told to or dropped. `Err` gives the
    /// job back when `limit` lines are already waiting.
    pub(super) fn enqueue(&self, job: Job, limit: usize) -> Result<Option<Lead<'_>>, Job> {
        let mut p = lock(&self.pending);
        if p.leading {
            if p.jobs.len() >= limit {
                return Err(job);
            }
            p.jobs.push(job);
            return Ok(None);
        }
        p.leading = true;
        let mut batch = std::mem::take(&mut p.jobs);
        batch.push(job);
        Ok(Some(Lead {
            inline: self,
            batch,
        }))
    }

    /// Leads with `line` (handed the lead by the last leader): writes it first, then what is
    /// queued; what it was told of its own line goes to `done`.
    pub(super) fn lead_with(&self, line: Vec<u8>, done: tokio::sync::oneshot::Sender<Done>) {
        let queued = std::mem::take(&mut lock(&self.pending).jobs);
        let mut batch = Vec::with_capacity(queued.len() + 1);
        batch.push(Job { line, done });
        batch.extend(queued);
        self.lead(batch);
    }

    /// Writes `batch`, then what was queued meanwhile, for at most [`ROUNDS`] batches; then
    /// hands the lead to the oldest waiting call, or gives it up when none waits. A call that
    /// stopped waiting (past `WRITE_WAIT`) takes no lead: its line is written all the same.
    fn lead(&self, mut batch: Vec<Job>) {
        loop {
            let mut writer = lock(&self.writer);
            for _ in 0..ROUNDS {
                let rest = batch.split_off(batch.len().min(BATCH));
                writer.commit(batch);
                batch = rest;
                let mut p = lock(&self.pending);
                batch.append(&mut p.jobs);
                if batch.is_empty() {
                    p.leading = false;
                    return;
                }
            }
            drop(writer);
            let mut p = lock(&self.pending);
            batch.append(&mut p.jobs);
            let mut waiting = batch.into_iter();
            let oldest = waiting
                .next()
                .expect("a lead is handed on only with lines waiting");
            match oldest.done.send(Done::Lead(oldest.line)) {
                // `leading` stays set: the lead is the oldest call's now.
                Ok(()) => {
                    p.jobs = waiting.collect();
                    return;
                }
                Err(Done::Lead(line)) => {
                    drop(p);
                    let (done, _) = tokio::sync::oneshot::channel();
                    batch = std::iter::once(Job { line, done }).chain(waiting).collect();
                }
                Err(Done::Written(_)) => unreachable!("a lead is sent as a lead"),
            }
        }
    }
}

/// The lead taken with a call's line, not yet exercised: lines queued meanwhile join its
/// write. Dropped unused (its call cancelled while it let others queue), it writes all the
/// same, so the lines queued behind it are never stranded.
pub(super) struct Lead<'a> {
    inline: &'a Inline,
    batch: Vec<Job>,
}

impl Lead<'_> {
    /// Writes the lead's lines and those queued since it was taken, as a leader does.
    pub(super) fn write(mut self) {
        self.exercise();
    }

    fn exercise(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let mut batch = std::mem::take(&mut self.batch);
        batch.append(&mut lock(&self.inline.pending).jobs);
        self.inline.lead(batch);
    }
}

impl Drop for Lead<'_> {
    fn drop(&mut self) {
        self.exercise();
    }
}

/// A call waiting to be told its line was written. Handed the lead, it leads (its own line
/// first); dropped before it was told (its call cancelled, or out of time), it takes up a lead
/// handed to it meanwhile, so the lines queued behind it are never stranded.
pub(super) struct Waiting<'a> {
    told: tokio::sync::oneshot::Receiver<Done>,
    inline: Option<&'a Inline>,
}

impl<'a> Waiting<'a> {
    /// Waits on `told`; `inline` is the writer that may hand it the lead (`None`: a thread's).
    pub(super) fn new(
        told: tokio::sync::oneshot::Receiver<Done>,
        inline: Option<&'a Inline>,
    ) -> Waiting<'a> {
        Waiting { told, inline }
    }

    /// What became of the line: written, or not (why); `None` when it was not written by
    /// `deadline`. A line this call wrote itself is told at once, without a timer.
    pub(super) async fn written(
        &mut self,
        deadline: tokio::time::Instant,
    ) -> Option<Result<(), String>> {
        use tokio::sync::oneshot::error::TryRecvError;
        loop {
            let told = match self.told.try_recv() {
                Ok(told) => Some(told),
                Err(TryRecvError::Closed) => None,
                Err(TryRecvError::Empty) => {
                    match tokio::time::timeout_at(deadline, &mut self.told).await {
                        Ok(told) => told.ok(),
                        Err(_) => return None,
                    }
                }
            };
            match told {
                Some(Done::Written(written)) => return Some(written),
                Some(Done::Lead(line)) => self.lead(line),
                None => return Some(Err("the audit writer has stopped".into())),
            }
        }
    }

    /// Leads with `line`, to be told of it anew.
    fn lead(&mut self, line: Vec<u8>) {
        let inline = self
            .inline
            .expect("only the writer in the calls' tasks hands on its lead");
        let (done, told) = tokio::sync::oneshot::channel();
        self.told = told;
        inline.lead_with(line, done);
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        // Closed first: a lead is then either here to be read, or refused to its sender, who
        // keeps it.
        self.told.close();
        if let (Ok(Done::Lead(line)), Some(_)) = (self.told.try_recv(), self.inline) {
            self.lead(line);
        }
    }
}

/// `m` locked; a writer that panicked mid-write left nothing half-done that matters here (the
/// head moves only after a write).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Writer {
    /// Writes `batch` ([`Writer::write`]) and tells each of its calls how that went.
    fn commit(&mut self, batch: Vec<Job>) {
        let written = self.write(batch.iter().map(|j| j.line.as_slice()));
        for job in batch {
            let _ = job.done.send(Done::Written(written.clone()));
        }
    }

    /// Seals `lines` after the chain's head, writes and flushes them, then moves the head
    /// (and its file) past them. Nothing moves when the write fails: the next lines are
    /// sealed after the last line written.
    fn write<'a>(&mut self, lines: impl Iterator<Item = &'a [u8]>) -> Result<(), String> {
        let mut next = self.head.clone();
        let mut chain = self.chain.clone();
        let mut bytes = Vec::with_capacity(1024);
        for line in lines {
            bytes.extend_from_slice(&chain::seal(&self.key, &mut next, line));
            if next.seq == 1 {
                chain = Some(next.seal.clone());
            }
        }
        self.out
            .write_all(&bytes)
            .and_then(|_| self.out.flush())
            .map_err(|e| e.to_string())?;
        self.head = next;
        self.chain = chain;
        if let Some(chain) = &self.chain {
            self.heads.send_replace(Some(Anchor {
                chain: chain.clone(),
                head: self.head.clone(),
            }));
        }
        if let Some(f) = self.head_file.as_ref() {
            // In place and of a fixed length: never half a head on disk.
            let text = chain::head_text(&self.key, &self.head, self.chain.as_deref());
            sink::write_at_start(f, text.as_bytes())
                .map_err(|e| format!("cannot write the chain's head: {e}"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
