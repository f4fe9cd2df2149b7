//! What `inject` writes as JSON (`--json-out`). The reliability tests read the same types
//! (they include this file), so the writer and the reader can't disagree on a field.
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `inject frames`: per kind of crafted traffic, what was sent.
pub(crate) type FramesReport = BTreeMap<String, KindReport>;

/// One kind of crafted traffic, over all rounds.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct KindReport {
    /// Frames or datagrams the local kernel took.
    pub sent: u64,
    /// Sends the local kernel refused (e.g. a frame above the MTU).
    pub refused: u64,
    /// The last refusal's error.
    pub error: Option<String>,
}

/// `inject relay`: exactly what the relay did.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RelayReport {
    /// Datagrams received from the replay.
    pub received_packets: u64,
    /// Datagrams sent on, duplicates and end-of-session packets included.
    pub forwarded_packets: u64,
    /// End-of-session packets forwarded.
    pub end_of_session: u64,
    /// Messages in the packets received (end of session excluded).
    pub received_messages: u64,
    /// Sequence numbers of the messages dropped.
    pub lost: Vec<u64>,
    /// Sequence numbers of the first message of each packet sent twice.
    pub duplicated: Vec<u64>,
    /// Sequence numbers of the first message of each packet held back and sent late.
    pub reordered: Vec<u64>,
    /// Sequence numbers of the packets a copy in another session was sent before.
    #[serde(default)]
    pub stray_session: Vec<u64>,
    /// The sequence numbers the forged copies carried.
    #[serde(default)]
    pub forged_seq: Vec<u64>,
}
