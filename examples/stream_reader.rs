//! Many readers of one bot's vote stream in one process, for `benches/vote_stream.sh`.
//!
//! Opens `COUNT` streams (`GET {base}/bots/{bot}/votes/stream` with the bot's token) on one
//! thread, reads them until SIGTERM or SIGINT, and then prints one line per stream that saw
//! something unexpected and a summary: vote events, whether every stream's ids were
//! consecutive, overflow events, heartbeats, and the reader's own CPU seconds.
//!
//!   cargo build --release --example stream_reader
//!   target/release/examples/stream_reader 127.0.0.1:8080 /api/v1 BOT TOKEN 100
//!
//! It looks only at what it counts (where each event ends, and the first line of each), so that
//! it costs the machine it shares with the server little, and 100 readers cost one process,
//! not 100.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::signal::unix::{signal, SignalKind};

#[derive(Default)]
struct Tally {
    votes: AtomicU64,
    overflows: AtomicU64,
    heartbeats: AtomicU64,
    gaps: AtomicU64,
    failed: AtomicU64,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 6 {
        eprintln!("usage: stream_reader HOST:PORT BASE_PATH BOT TOKEN COUNT");
        std::process::exit(2);
    }
    let count: usize = match args[5].parse() {
        Ok(n) => n,
        Err(_) => {
            eprintln!("COUNT must be a whole number");
            std::process::exit(2);
        }
    };
    let request = format!(
        "GET {}/bots/{}/votes/stream HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nAccept: text/event-stream\r\n\r\n",
        args[2], args[3], args[1], args[4]
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let tally = Arc::new(Tally::default());
    runtime.block_on(async {
        let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
        let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
        for stream in 0..count {
            let (address, request, tally) = (args[1].clone(), request.clone(), Arc::clone(&tally));
            tokio::spawn(async move {
                if let Err(error) = read(stream, &address, &request, &tally).await {
                    tally.failed.fetch_add(1, Ordering::Relaxed);
                    eprintln!("stream {stream}: {error}");
                }
            });
        }
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    });
    let load = |n: &AtomicU64| n.load(Ordering::Relaxed);
    println!(
        "streams {count} votes {} gaps {} overflows {} heartbeats {} failed {} reader_cpu_s {:.2}",
        load(&tally.votes),
        load(&tally.gaps),
        load(&tally.overflows),
        load(&tally.heartbeats),
        load(&tally.failed),
        own_cpu_seconds()
    );
}

async fn read(stream: usize, address: &str, request: &str, tally: &Tally) -> std::io::Result<()> {
    let mut socket = TcpStream::connect(address).await?;
    socket.set_nodelay(true)?;
    socket.write_all(request.as_bytes()).await?;
    let mut raw = Vec::with_capacity(64 * 1024);
    // Large reads: one system call takes what a stream's whole write interval sent.
    let mut buf = vec![0; 256 * 1024];
    // The response head.
    let body_start = loop {
        let n = socket.read(&mut buf).await?;
        if n == 0 {
            return Err(std::io::Error::other("closed before the response head"));
        }
        raw.extend_from_slice(&buf[..n]);
        if let Some(end) = find(&raw, b"\r\n\r\n") {
            break end + 4;
        }
    };
    let head = String::from_utf8_lossy(&raw[..body_start]).to_string();
    if !head.starts_with("HTTP/1.1 200") {
        return Err(std::io::Error::other(format!(
            "answered {}",
            head.lines().next().unwrap_or("")
        )));
    }
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let mut body = Dechunk::new(chunked);
    let mut events = Events::default();
    body.feed(&raw[body_start..], |data| events.feed(data, tally));
    while !body.done {
        let n = socket.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        body.feed(&buf[..n], |data| events.feed(data, tally));
    }
    if events.overflowed {
        eprintln!(
            "stream {stream}: cut off for overflow after id {:?}",
            events.last
        );
    }
    Ok(())
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, needle)
}

/// Chunked transfer decoding, fed a read at a time.
struct Dechunk {
    chunked: bool,
    /// Bytes of the current chunk's data still to come.
    left: usize,
    /// A chunk-size line (or a data-ending CRLF) cut by a read.
    line: Vec<u8>,
    done: bool,
}

impl Dechunk {
    fn new(chunked: bool) -> Self {
        Self {
            chunked,
            left: 0,
            line: Vec::new(),
            done: false,
        }
    }

    /// Hands each piece of the body in `input` to `out`, where it lies: no copy.
    fn feed(&mut self, mut input: &[u8], mut out: impl FnMut(&[u8])) {
        if !self.chunked {
            out(input);
            return;
        }
        while !input.is_empty() && !self.done {
            if self.left > 0 {
                let take = self.left.min(input.len());
                out(&input[..take]);
                self.left -= take;
                input = &input[take..];
                continue;
            }
            // Between chunks: "\r\n" after data, then "SIZE\r\n".
            match memchr::memchr(b'\n', input) {
                None => {
                    self.line.extend_from_slice(input);
                    return;
                }
                Some(end) => {
                    self.line.extend_from_slice(&input[..end]);
                    input = &input[end + 1..];
                    let line = std::mem::take(&mut self.line);
                    let text = String::from_utf8_lossy(&line);
                    let text = text.trim();
                    if text.is_empty() {
                        continue;
                    }
                    let size = text.split(';').next().unwrap_or("");
                    match usize::from_str_radix(size, 16) {
                        Ok(0) => self.done = true,
                        Ok(n) => self.left = n,
                        Err(_) => self.done = true,
                    }
                }
            }
        }
    }
}

/// Server-Sent Events, counted an event at a time: one scan for the blank lines that end
/// events, and a look at the first bytes of each (a vote's starts with its id).
#[derive(Default)]
struct Events {
    last: Option<u64>,
    overflowed: bool,
    /// The start of an event that the last piece of the body cut off.
    carry: Vec<u8>,
}

/// What follows a vote event's id, up to its data.
const VOTE_TAIL: &[u8] = b"\nevent: vote\ndata: ";

impl Events {
    /// Counts the events that `data` completes; keeps the incomplete one at its end.
    fn feed(&mut self, mut data: &[u8], tally: &Tally) {
        if !self.carry.is_empty() {
            let end = if self.carry.ends_with(b"\n") && data.first() == Some(&b'\n') {
                Some(1)
            } else {
                memchr::memmem::find(data, b"\n\n").map(|end| end + 2)
            };
            let Some(end) = end else {
                self.carry.extend_from_slice(data);
                return;
            };
            let mut carried = std::mem::take(&mut self.carry);
            carried.extend_from_slice(&data[..end]);
            self.count(&carried, tally);
            carried.clear();
            self.carry = carried;
            data = &data[end..];
        }
        let counted = self.count(data, tally);
        self.carry.extend_from_slice(&data[counted..]);
    }

    /// Counts the complete events at the start of `input`; returns the bytes they take.
    fn count(&mut self, input: &[u8], tally: &Tally) -> usize {
        let (mut votes, mut gaps, mut heartbeats) = (0, 0, 0);
        let mut start = 0;
        while start < input.len() {
            let event = &input[start..];
            // A vote event's end is the end of its one data line: found with a one-byte
            // search from its data on, not a two-byte search over the whole event.
            let vote = event.strip_prefix(b"id: ").and_then(|rest| {
                let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
                let data = rest[digits..].strip_prefix(VOTE_TAIL)?;
                let line = memchr::memchr(b'\n', data)?;
                (data.get(line + 1) == Some(&b'\n')).then(|| {
                    let id = rest[..digits]
                        .iter()
                        .fold(0u64, |id, &b| id * 10 + u64::from(b - b'0'));
                    (id, event.len() - data.len() + line + 2)
                })
            });
            if let Some((id, length)) = vote {
                if self.last.is_some_and(|last| id != last + 1) {
                    gaps += 1;
                }
                self.last = Some(id);
                votes += 1;
                start += length;
                continue;
            }
            let Some(end) = memchr::memmem::find(event, b"\n\n") else {
                break;
            };
            if event.starts_with(b"event: overflow") {
                self.overflowed = true;
                tally.overflows.fetch_add(1, Ordering::Relaxed);
            } else if event.starts_with(b": heartbeat") {
                heartbeats += 1;
            }
            start += end + 2;
            // A third newline in a row ends no event.
            while input.get(start) == Some(&b'\n') {
                start += 1;
            }
        }
        tally.votes.fetch_add(votes, Ordering::Relaxed);
        tally.gaps.fetch_add(gaps, Ordering::Relaxed);
        tally.heartbeats.fetch_add(heartbeats, Ordering::Relaxed);
        start
    }
}

/// User and system CPU seconds of this process, from /proc/self/stat.
fn own_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name's closing parenthesis; utime and stime are 14th and 15th.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (ticks(11) + ticks(12)) / hz.max(1.0)
}
