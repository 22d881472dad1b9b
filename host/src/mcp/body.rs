//! What an `/mcp` response body is made of: runs of bytes written for this response, and
//! shared bytes (a view's document) that every response serving them references without a
//! copy. Its length is known as it grows, so a batch's reply can be capped as it is built.

use bytes::Bytes;

/// Where a reply is written: bytes written for it, and bytes shared with other responses.
pub trait Sink: std::io::Write {
    /// Appends bytes shared with other responses.
    fn shared(&mut self, bytes: &Bytes);
}

/// A sink that only counts the bytes a reply would take (nothing is kept).
#[derive(Debug, Default)]
pub struct Count(pub usize);

impl std::io::Write for Count {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Sink for Count {
    fn shared(&mut self, bytes: &Bytes) {
        self.0 += bytes.len();
    }
}

/// A response body under construction.
#[derive(Debug, Default)]
pub struct Chunks {
    done: Vec<Bytes>,
    current: Vec<u8>,
    len: usize,
}

impl Sink for Chunks {
    /// Appends bytes shared with other responses (not copied).
    fn shared(&mut self, bytes: &Bytes) {
        self.flush_current();
        self.len += bytes.len();
        self.done.push(bytes.clone());
    }
}

impl Chunks {
    /// The body's length so far, in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing has been written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Drops everything written since the body was `len` bytes long (at most its length).
    pub fn truncate(&mut self, len: usize) {
        let mut cut = self.len.saturating_sub(len);
        self.len -= cut;
        while cut > self.current.len() {
            cut -= self.current.len();
            self.current = match self.done.pop() {
                Some(piece) => piece.to_vec(),
                None => Vec::new(),
            };
        }
        self.current.truncate(self.current.len() - cut);
    }

    fn flush_current(&mut self) {
        if !self.current.is_empty() {
            self.done
                .push(Bytes::from(std::mem::take(&mut self.current)));
        }
    }

    /// The pieces, in order.
    pub fn into_pieces(mut self) -> Vec<Bytes> {
        self.flush_current();
        self.done
    }

    /// The whole body in one buffer (tests).
    pub fn concat(self) -> Vec<u8> {
        self.into_pieces().concat()
    }
}

impl std::io::Write for Chunks {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.current.extend_from_slice(buf);
        self.len += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[test]
    fn shared_bytes_are_referenced_not_copied() {
        let view = Bytes::from(vec![b'x'; 1000]);
        let mut c = Chunks::default();
        c.write_all(b"[").unwrap();
        c.shared(&view);
        c.write_all(b",1").unwrap();
        c.truncate(1001);
        c.write_all(b"]").unwrap();
        assert_eq!(c.len(), 1002);
        let mut d = Chunks::default();
        d.write_all(b"[").unwrap();
        d.shared(&view);
        d.write_all(b"]").unwrap();
        d.truncate(1);
        d.write_all(b"[]").unwrap();
        assert_eq!(d.concat(), b"[[]");
        let pieces = c.into_pieces();
        assert_eq!(pieces.len(), 3);
        assert_eq!(
            pieces[1].as_ptr(),
            view.as_ptr(),
            "the same bytes, not a copy"
        );
        assert_eq!(&pieces[2][..], b"]");
    }
}
