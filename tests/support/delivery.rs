//! A webhook receiver's side of one request, for the tests that run a receiver of their own.

use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;

/// One request to a receiver: its delivery id (`X-Botlist-Delivery`) and its body.
pub fn read_delivery(stream: &TcpStream) -> (String, Vec<u8>) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let (mut length, mut delivery) = (0usize, String::new());
    let mut line = String::new();
    while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if let Some(v) = lower.strip_prefix("x-botlist-delivery:") {
            delivery = v.trim().to_owned();
        }
        line.clear();
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    (delivery, body)
}
