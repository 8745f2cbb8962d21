//! Attention transfer in the causal language model (`lab::models::smollm::transfer`): layer 0's
//! Hedgehog maps, trained under the causal mask on the lab's transfer text (256 tokens, 40 Adam
//! steps), win back the perplexity that the zero-shot swap of that layer loses, on a held-out
//! text, for three seeds of the maps' initial noise. Measured here: exact 119.55; zero-shot
//! 338.2 / 330.2 / 289.9; transferred 125.4 / 123.8 / 125.7 (about 19 s in all).
//!
//! Needs the GGUF file (scripts/fetch-model.sh caches it).

use softmax_kernel_lab::cli::default_lm_path;
use softmax_kernel_lab::lab::config::ExperimentConfig;
use softmax_kernel_lab::lab::models::smollm::transfer::transfer_report;
use softmax_kernel_lab::numerics::llama::LlamaModel;

/// Never trained on: four unrelated sentences, as a reader's paragraph can be.
const HELD_OUT: &str = "Every spring the river floods the low meadows, and the farmers move \
their sheep to the hills until the water falls. Children count the days on the school calendar, \
and the old mill, silent for a century, turns again for the festival. A student types a \
sentence, and the lab runs a real transformer on it to show what each approximation of softmax \
attention does to every head. Random features replace the exponential kernel by an average of \
simple products, so the cost of attention grows only linearly with the length of the input text.";

#[test]
fn transfer_wins_back_the_zero_shot_perplexity_of_layer_0() {
    let bytes = std::fs::read(default_lm_path()).expect("scripts/fetch-model.sh caches the model");
    let model = LlamaModel::load(bytes).expect("the pinned file loads");
    let held_out = model.tokenizer.encode(HELD_OUT).expect("encodes");
    for seed in [1, 2, 3] {
        let mut config = ExperimentConfig {
            seed,
            ..ExperimentConfig::default()
        };
        config.attention.lm_train = vec![0];
        config.attention.lm_train_steps = 40;
        let mut points = 0;
        let report = transfer_report(&model, &config, &held_out, &|| 0.0, &mut |layer, _| {
            assert_eq!(layer, 0);
            points += 1;
        })
        .expect("trains and judges");
        let verdict = &report.verdict;
        let curve = &report.layers[0].curve;
        eprintln!(
            "seed {seed}: held-out KL {:?} → {:?}; perplexity exact {:.3}, zero-shot {:.3}, \
             after transfer {:.3}",
            curve[0].eval_kl,
            curve[40].eval_kl,
            verdict.exact,
            verdict.zero_shot,
            verdict.transferred
        );
        assert_eq!((report.training_tokens, points, curve.len()), (256, 41, 41));
        let kl = |i: usize| curve[i].eval_kl.expect("evaluated at 0 and the last step");
        assert!(kl(40) < kl(0) / 2.0, "the held-out KL halves: {curve:?}");
        // The swap of layer 0 alone more than doubles the perplexity (×2.4 to ×2.8 for these
        // seeds); transfer brings it back within 10 % of exact (×1.03 to ×1.05).
        assert!(verdict.zero_shot > 2.0 * verdict.exact, "{verdict:?}");
        assert!(verdict.transferred < 1.1 * verdict.exact, "{verdict:?}");
    }
}
