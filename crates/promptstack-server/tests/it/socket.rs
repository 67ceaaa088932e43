//! Over a real socket: a body over the limit is answered 413 while the client is still sending.

use std::net::SocketAddr;

use promptstack_server::ServerConfig;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::harness::Harness;

async fn serving(h: &Harness) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(promptstack_server::serve(
        listener,
        h.state.clone(),
        std::future::pending(),
    ));
    addr
}

const BODY_BYTES: usize = 50 * 1024 * 1024;

/// Sends `head` and then a 50 MiB body in 64 KiB writes while reading the answer; returns the
/// answer's bytes and how much of the body was written before the write side failed.
async fn send_huge(addr: SocketAddr, head: String, chunked: bool) -> (String, usize) {
    let client = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut reader, mut writer) = client.into_split();
    let sender = tokio::spawn(async move {
        writer.write_all(head.as_bytes()).await.unwrap();
        let piece = vec![b'x'; 64 * 1024];
        let mut sent = 0;
        while sent < BODY_BYTES {
            let framed = if chunked {
                let mut framed = format!("{:x}\r\n", piece.len()).into_bytes();
                framed.extend_from_slice(&piece);
                framed.extend_from_slice(b"\r\n");
                framed
            } else {
                piece.clone()
            };
            if writer.write_all(&framed).await.is_err() {
                break;
            }
            sent += piece.len();
        }
        if chunked {
            let _ = writer.write_all(b"0\r\n\r\n").await;
        }
        sent
    });
    let mut answer = Vec::new();
    let read = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            match reader.read(&mut buf).await {
                Ok(0) => break Ok(()),
                Ok(n) => {
                    answer.extend_from_slice(&buf[..n]);
                    // The whole problem document has arrived.
                    if answer.ends_with(b"}") {
                        break Ok(());
                    }
                }
                Err(e) => break Err(e),
            }
        }
    })
    .await
    .expect("the answer came within 60 s");
    let answer = String::from_utf8_lossy(&answer).into_owned();
    assert!(
        read.is_ok(),
        "reading the answer failed: {read:?}; read so far: {answer}"
    );
    let sent = sender.await.unwrap();
    (answer, sent)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_50_mib_body_gets_a_413_problem_not_a_reset() {
    let h = Harness::with_config(ServerConfig::default().rate_limit(0, 1)).await;
    let addr = serving(&h).await;
    for chunked in [false, true] {
        let framing = if chunked {
            "transfer-encoding: chunked".to_owned()
        } else {
            format!("content-length: {BODY_BYTES}")
        };
        let head = format!(
            "POST /v1/agents/chat-assistant/render HTTP/1.1\r\nhost: test\r\n\
             authorization: Bearer {}\r\ncontent-type: application/json\r\n{framing}\r\n\r\n",
            h.acme.viewer
        );
        let (answer, sent) = send_huge(addr, head, chunked).await;
        assert!(
            answer.starts_with("HTTP/1.1 413"),
            "chunked {chunked}: {answer}"
        );
        assert!(
            answer.contains("content-type: application/problem+json"),
            "{answer}"
        );
        assert!(answer.contains("\"status\":413"), "{answer}");
        // The server read what the client sent: nothing was reset under it.
        assert_eq!(sent, BODY_BYTES, "chunked {chunked}");
        // And it still answers.
        let mut probe = tokio::net::TcpStream::connect(addr).await.unwrap();
        probe
            .write_all(b"GET /healthz HTTP/1.1\r\nhost: test\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut healthz = String::new();
        probe.read_to_string(&mut healthz).await.unwrap();
        assert!(healthz.starts_with("HTTP/1.1 200"), "{healthz}");
    }
}
