//! Recordings: an exchange saved is the exchange replayed, repetitions stay apart, and a folder
//! that does not hold what it promises is refused, loudly.

use promptstack_eval::record::{Exchange, MAX_RECORDING_BYTES, RecordingError, Recordings, key};
use promptstack_eval::wire::{Stream, StreamFormat};
use serde_json::json;

fn exchange(repetition: u32, body: &[u8]) -> Exchange {
    Exchange {
        format: "openai-chat".into(),
        model: "gemma-3-270m".into(),
        repetition,
        request: json!({"model": "gemma-3-270m", "stream": true, "messages": [{"role": "user", "content": "hi"}]}),
        status: 200,
        body: body.to_vec(),
    }
}

fn load(recordings: &Recordings, asked: &Exchange) -> Result<Exchange, RecordingError> {
    recordings.load(
        &asked.format,
        &asked.model,
        asked.repetition,
        &asked.request,
    )
}

#[test]
fn a_saved_exchange_replays_byte_for_byte_and_reads_as_the_live_one() {
    let dir = tempfile::tempdir().unwrap();
    let recordings = Recordings::new(dir.path().join("rec"));
    let body = include_bytes!("wire/openai-chat.sse");
    let live = exchange(0, body);
    recordings.save(&live).unwrap();
    let replayed = load(&recordings, &live).unwrap();
    assert_eq!(replayed, live);
    let read = |bytes: &[u8]| {
        let mut stream = Stream::new(StreamFormat::OpenaiChat);
        stream.feed(bytes).unwrap();
        stream.finish().unwrap()
    };
    assert_eq!(read(&replayed.body), read(body));
    // A body that is not UTF-8 is kept byte for byte too.
    let binary = exchange(1, &[0xff, 0x00, b'd', b'a']);
    recordings.save(&binary).unwrap();
    assert_eq!(load(&recordings, &binary).unwrap(), binary);
}

#[test]
fn repetitions_are_separate_exchanges_and_key_order_does_not_matter() {
    let dir = tempfile::tempdir().unwrap();
    let recordings = Recordings::new(dir.path());
    for repetition in 0..3 {
        recordings
            .save(&exchange(
                repetition,
                format!("data: {repetition}\n\n").as_bytes(),
            ))
            .unwrap();
    }
    for repetition in 0..3 {
        let got = load(&recordings, &exchange(repetition, b"")).unwrap();
        assert_eq!(got.body, format!("data: {repetition}\n\n").as_bytes());
    }
    let a = json!({"a": 1, "b": [1, 2]});
    let b: serde_json::Value = serde_json::from_str(r#"{"b": [1, 2], "a": 1}"#).unwrap();
    assert_eq!(key("f", "m", 0, &a), key("f", "m", 0, &b));
    assert_ne!(key("f", "m", 0, &a), key("f", "m", 1, &a));
    assert_ne!(key("f", "m", 0, &a), key("f", "m2", 0, &a));
    assert_ne!(key("fm", "", 0, &a), key("f", "m", 0, &a));
}

#[test]
fn a_missing_exchange_fails_loudly() {
    let dir = tempfile::tempdir().unwrap();
    let recordings = Recordings::new(dir.path());
    recordings.save(&exchange(0, b"x")).unwrap();
    match load(&recordings, &exchange(1, b"")) {
        Err(RecordingError::Missing {
            repetition, model, ..
        }) => assert_eq!((repetition, model.as_str()), (1, "gemma-3-270m")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_file_that_is_not_what_its_name_promises_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let recordings = Recordings::new(dir.path());
    let asked = exchange(0, b"data: a\n\n");
    let path = recordings.save(&asked).unwrap();
    let original = std::fs::read_to_string(&path).unwrap();

    // Another exchange's file under this name.
    let other = recordings.save(&exchange(7, b"data: b\n\n")).unwrap();
    std::fs::copy(&other, &path).unwrap();
    assert!(matches!(
        load(&recordings, &asked),
        Err(RecordingError::Invalid(..))
    ));

    // The request edited inside the file.
    std::fs::write(&path, original.replace("\"hi\"", "\"hello\"")).unwrap();
    assert!(matches!(
        load(&recordings, &asked),
        Err(RecordingError::Invalid(..))
    ));

    // Another format version, unknown keys, both bodies, not JSON.
    for text in [
        original.replace("\"recording_version\": 1", "\"recording_version\": 2"),
        original.replace("\"status\"", "\"extra\": 1, \"status\""),
        original.replace("\"status\"", "\"body_base64\": \"\", \"status\""),
        "{".to_owned(),
    ] {
        std::fs::write(&path, text).unwrap();
        assert!(matches!(
            load(&recordings, &asked),
            Err(RecordingError::Invalid(..))
        ));
    }

    // Too large, or not a regular file.
    std::fs::File::create(&path)
        .unwrap()
        .set_len(MAX_RECORDING_BYTES + 1)
        .unwrap();
    assert!(matches!(
        load(&recordings, &asked),
        Err(RecordingError::Refused(..))
    ));
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    assert!(matches!(
        load(&recordings, &asked),
        Err(RecordingError::Refused(..))
    ));
    std::fs::remove_dir(&path).unwrap();
    std::os::unix::fs::symlink(&other, &path).unwrap();
    assert!(matches!(
        load(&recordings, &asked),
        Err(RecordingError::Refused(..))
    ));
}
