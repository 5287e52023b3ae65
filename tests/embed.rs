//! The local semantic signal's model: the Rust tokenizer gives the model's own token ids (the
//! fixture is written by `tools/embed/tokens.py` from the model's `tokenizer.json`), every token
//! is found again, the int8 encoder gives the float model's vectors (the fixture is written by
//! `tools/embed/export.py --fixture`), and meaning is closer than chance. Recall by meaning through the real hook is
//! in `tests/recall.rs`.

use serde_json::Value;

#[test]
fn the_tokenizer_gives_the_models_token_ids() {
    let model = ovmem::embed::Model::get();
    let fixture = include_str!("fixtures/embed/tokens.jsonl");
    let mut checked = 0;
    for line in fixture.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let text = v["text"].as_str().unwrap();
        let want: Vec<u32> = v["ids"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect();
        let got = model.tokenize(text);
        assert_eq!(got, want, "{text:?}: {:?}", got.iter().map(|&i| model.token(i)).collect::<Vec<_>>());
        checked += 1;
    }
    assert!(checked > 300, "the fixture has {checked} texts");
}

#[test]
fn every_token_of_the_vocabulary_is_found_again() {
    let model = ovmem::embed::Model::get();
    assert_eq!(model.len(), 30522);
    for id in 0..model.len() as u32 {
        assert_eq!(model.id(model.token(id)), Some(id), "{:?}", model.token(id));
    }
}

#[test]
fn meaning_is_closer_than_chance() {
    let m = ovmem::embed::Model::get();
    let cos = |a: &str, b: &str| {
        let (x, y) = (m.embed(a).unwrap(), m.embed(b).unwrap());
        x.iter().zip(&y).map(|(p, q)| p * q).sum::<f32>()
    };
    let near = cos("How do I reset my password?", "I forgot my login credentials");
    let far = cos("How do I reset my password?", "The weather in Paris is sunny");
    assert!(near > far + 0.1, "near {near}, far {far}");
    assert!(m.embed("").is_none() && m.embed("   ").is_none());
}

#[test]
fn the_encoder_gives_the_full_models_vectors() {
    // Vectors of the float model; the shipped one has int8 weights and multiplies in int8, which
    // costs a little agreement (about 0.999 on sentences, 0.989 on 120 repeated letters).
    let model = ovmem::embed::Model::get();
    let encoder = ovmem::embed::encoder();
    let fixture = include_str!("fixtures/embed/vectors.jsonl");
    let mut n = 0;
    for line in fixture.lines() {
        let row: Value = serde_json::from_str(line).unwrap();
        let text = row["text"].as_str().unwrap();
        let want: Vec<f32> = row["vector"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
        let got = encoder.encode(&model.tokenize(text));
        let cos = ovmem::embed::dot(&got, &want);
        assert!(cos > 0.985, "{text:?}: cosine {cos} with the full model's vector");
        n += 1;
    }
    assert!(n >= 20);
}
