//! The encoder's share of the prompt hook and of capture: one question's vector (16 word
//! pieces, as most prompts are) and one long memory's (its first 128 word pieces).

use criterion::{criterion_group, criterion_main, Criterion};

fn bench(c: &mut Criterion) {
    let model = ovmem::embed::Model::get();
    let encoder = ovmem::embed::encoder();
    let question = model.tokenize("Which port does the staging database listen on for integration tests?");
    let memory = model.tokenize(&"The deploy pipeline runs the integration suite against staging before it promotes a build, and a failed check rolls the release back. ".repeat(8));
    let memory = &memory[..memory.len().min(128)];
    c.bench_function(&format!("encode a question ({} word pieces)", question.len()), |b| {
        b.iter(|| encoder.encode(&question))
    });
    c.bench_function(&format!("encode a memory ({} word pieces)", memory.len()), |b| b.iter(|| encoder.encode(memory)));
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = bench
}
criterion_main!(benches);
