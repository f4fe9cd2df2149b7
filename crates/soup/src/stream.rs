//! A session's sequenced messages, kept for replay.

/// The sequenced messages of one session, numbered from 1: what a client logging in again
/// from number `n` is sent. Messages are stored back to back in one buffer.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Stream {
    data: Vec<u8>,
    /// Where each message ends in `data`.
    ends: Vec<usize>,
}

impl Stream {
    /// An empty stream: its first message will be number 1.
    pub fn new() -> Stream {
        Stream::default()
    }

    /// An empty stream with room for `messages` messages of `bytes` in all before it grows,
    /// its memory touched now (growing copies the stream, and a first touch faults a page: a
    /// latency-measuring sender does both before it starts, not in its send loop).
    pub fn with_capacity(messages: usize, bytes: usize) -> Stream {
        let mut data = vec![0u8; bytes];
        data.clear();
        let mut ends = vec![0usize; messages];
        ends.clear();
        Stream { data, ends }
    }

    /// Appends a message; returns its number.
    pub fn push(&mut self, message: &[u8]) -> u64 {
        self.data.extend_from_slice(message);
        self.ends.push(self.data.len());
        self.len()
    }

    /// Messages in the stream (the number of the last one).
    pub fn len(&self) -> u64 {
        self.ends.len() as u64
    }

    /// No message yet.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The number the next message will have.
    pub fn next_seq(&self) -> u64 {
        self.len() + 1
    }

    /// Message number `seq` (from 1), if there is one.
    pub fn get(&self, seq: u64) -> Option<&[u8]> {
        let i = usize::try_from(seq.checked_sub(1)?).ok()?;
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        Some(&self.data[start..end])
    }
}
