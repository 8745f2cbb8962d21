//! Attention transfer in one layer of the causal language model (`lab::models::smollm::transfer`):
//! the layer's Hedgehog maps trained under the causal mask on one text imitate the layer's
//! softmax rows on a held-out text better than the same maps untrained (the held-out KL falls by
//! at least a third), for three seeds of the maps' initial noise. The held-out perplexity is
//! printed, not asserted: with this 50-token training text it does not reliably fall (measured
//! at layer 10, exact 35.19: zero-shot 39.32 / 39.22 / 39.04, after 40 steps 37.20 / 39.15 /
//! 39.31); the line about perplexity is not met yet.
//!
//! Needs the GGUF file (scripts/fetch-model.sh caches it).

use softmax_kernel_lab::cli::default_lm_path;
use softmax_kernel_lab::lab::models::smollm::transfer::{LayerTransfer, train_layer};
use softmax_kernel_lab::numerics::attention::hedgehog::HedgehogSettings;
use softmax_kernel_lab::numerics::llama::LlamaModel;

const TRAINING: &str = "The river runs through the old town, past the market and the church, and \
    under the stone bridge where children fish in summer. In winter the water rises, and the \
    people who live near the banks move their boats and their animals to higher ground.";
const HELD_OUT: &str = "The library opens at nine in the morning. Students come to read, to \
    write their essays and to meet their friends, and the librarian knows most of them by name \
    after a few weeks of the term.";

#[test]
fn trained_maps_imitate_softmax_on_a_held_out_text() {
    let bytes = std::fs::read(default_lm_path()).expect("scripts/fetch-model.sh caches the model");
    let model = LlamaModel::load(bytes).expect("the pinned file loads");
    let training = model.tokenizer.encode(TRAINING).expect("encodes");
    let held_out = model.tokenizer.encode(HELD_OUT).expect("encodes");
    let exact = model
        .forward(&held_out, 0, None)
        .expect("runs")
        .perplexity()
        .expect("a loss");
    let layer = 10;
    for seed in [1, 2, 3] {
        // n = 32 ≠ d = 64: the initial maps carry the seed's noise.
        let settings = HedgehogSettings {
            half_features: 32,
            steps: 40,
            learning_rate: 0.01,
            seed,
        };
        let trained = train_layer(
            &model,
            (&training, &held_out),
            layer,
            (&settings, 40),
            &mut |_| {},
        )
        .expect("trains");
        let (first, last) = (trained.curve[0], trained.curve[40]);
        let untrained = LayerTransfer::untrained(&model, layer, &settings).expect("maps");
        let zero_shot = untrained.perplexity(&model, &held_out).expect("runs");
        let transferred = trained.perplexity(&model, &held_out).expect("runs");
        eprintln!(
            "seed {seed}: held-out KL {:?} → {:?}; perplexity exact {exact:.3}, zero-shot \
             {zero_shot:.3}, after transfer {transferred:.3}",
            first.eval_kl, last.eval_kl
        );
        let (before, after) = (
            first.eval_kl.expect("step 0"),
            last.eval_kl.expect("the last"),
        );
        assert!(
            after < before * 2.0 / 3.0,
            "seed {seed}: {first:?} {last:?}"
        );
        assert!(zero_shot.is_finite() && transferred.is_finite());
    }
}
