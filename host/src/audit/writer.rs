//! The audit writer's thread: seals the lines it is handed, in order, and writes them with a
//! group commit: the lines queued while one write was under way are sealed and written
//! together, with one write and one flush (and one head), and each call is told only once its
//! line is flushed. One call alone is written at once, as before; many at once cost one
//! system call between them instead of one each.

use std::io::Write;
use std::sync::mpsc::Receiver;

use super::chain::{self, Head};
use super::{sink, Anchor, Job};

/// Lines written together at most.
const BATCH: usize = 256;

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

impl Writer {
    /// Writes the lines `jobs` brings until every sender is gone.
    pub(super) fn run(mut self, jobs: Receiver<Job>) {
        while let Ok(first) = jobs.recv() {
            let mut batch = vec![first];
            while batch.len() < BATCH {
                match jobs.try_recv() {
                    Ok(job) => batch.push(job),
                    Err(_) => break,
                }
            }
            let written = self.write(&batch);
            for job in batch {
                let _ = job.done.send(written.clone());
            }
        }
    }

    /// Seals `batch` after the chain's head, writes and flushes it, then moves the head (and
    /// its file) past it. Nothing moves when the write fails: the next lines are sealed after
    /// the last line written.
    fn write(&mut self, batch: &[Job]) -> Result<(), String> {
        let mut next = self.head.clone();
        let mut chain = self.chain.clone();
        let mut bytes = Vec::with_capacity(batch.iter().map(|j| j.line.len() + 200).sum());
        for job in batch {
            bytes.extend_from_slice(&chain::seal(&self.key, &mut next, &job.line));
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
        if let Some(f) = self.head_file.as_mut() {
            // In place and of a fixed length: never half a head on disk.
            let text = chain::head_text(&self.key, &self.head, self.chain.as_deref());
            sink::write_at_start(f, text.as_bytes())
                .map_err(|e| format!("cannot write the chain's head: {e}"))?;
        }
        Ok(())
    }
}
