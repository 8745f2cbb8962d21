//! The configuration's text: links, bad values, the work limit, validation.

use super::*;
use crate::numerics::estimators::EstimatorId;

#[test]
fn per_side_mean_scales_follow_scale_until_set_and_round_trip_through_a_link() {
    let (config, notices) = ExperimentConfig::from_query("scale=0.5&yscale=100");
    assert!(notices.is_empty(), "{notices:?}");
    assert_eq!(config.mean_scales(), (0.5, 100.0));
    assert_eq!(config.get(Param::XMeanScale), "same");
    let query = config.to_query();
    assert!(
        query.contains("yscale=100") && !query.contains("xscale"),
        "{query}"
    );
    assert_eq!(ExperimentConfig::from_query(&query).0, config);
    // `same` (or nothing) gives the side back to `scale`.
    let mut edited = config.clone();
    edited.set(Param::YMeanScale, "same").unwrap();
    assert_eq!(edited.mean_scales(), (0.5, 0.5));
    edited.set(Param::YMeanScale, " 0.25 ").unwrap();
    assert_eq!(edited.y_mean_scale, Some(0.25));
    edited.set(Param::YMeanScale, "").unwrap();
    assert_eq!(edited.y_mean_scale, None);
    // Out of range or not a number: refused with what is allowed, nothing changed.
    for bad in ["0", "1e9", "NaN", "wide"] {
        let before = edited.clone();
        let error = edited.set(Param::XMeanScale, bad).unwrap_err();
        assert_eq!(error.key, "xscale");
        assert!(
            error.message.contains("same (the scale b of scale)"),
            "{error}"
        );
        assert_eq!(edited, before);
    }
    // A message from elsewhere (a worker) is checked too.
    let forged = ExperimentConfig {
        x_mean_scale: Some(f64::NAN),
        ..ExperimentConfig::default()
    };
    assert_eq!(forged.validate().unwrap_err().key, "xscale");
    // The generator sees the side's own scale.
    let params = config.dataset_params(config.d, 10).unwrap();
    let same = ExperimentConfig::from_query("scale=0.5")
        .0
        .dataset_params(50, 10)
        .unwrap();
    assert_ne!(params, same);
}

#[test]
fn query_round_trips_every_parameter() {
    let mut config = ExperimentConfig::default();
    config.set(Param::M, "64").unwrap();
    config.set(Param::Seed, "3").unwrap();
    config.set(Param::XNorm, "2.5").unwrap();
    config.set(Param::Estimators, "var,prf").unwrap();
    config.set(Param::Hyperbolic, "0").unwrap();
    config.set(Param::Omega, "fresh").unwrap();
    config.set(Param::Probe, "17").unwrap();
    config.set(Param::Trials, "500").unwrap();
    let (parsed, notices) = ExperimentConfig::from_query(&format!("?{}", config.to_query()));
    assert!(notices.is_empty(), "{notices:?}");
    assert_eq!(parsed, config);
    assert!(parsed.validate().is_ok());
}

#[test]
fn bad_values_fall_back_to_defaults_with_a_notice() {
    let (config, notices) = ExperimentConfig::from_query(
        "m=abc&d=NaN&n=-5&seed=inf&pairs=1e99&xnorm=%F0%9F%98%80&bogus=1&m=7&est=",
    );
    let defaults = ExperimentConfig::default();
    assert_eq!(config, defaults);
    let keys: Vec<&str> = notices.iter().map(|n| n.key.as_str()).collect();
    for key in ["m", "d", "n", "seed", "pairs", "xnorm", "bogus", "est"] {
        assert!(keys.contains(&key), "no notice for {key}: {notices:?}");
    }
    assert!(
        notices
            .iter()
            .any(|n| n.key == "m" && n.message.contains("integer from 1 to 16384")),
        "{notices:?}"
    );
    assert!(
        notices
            .iter()
            .any(|n| n.key == "m" && n.message.contains("more than once"))
    );
}

#[test]
fn set_rejects_out_of_range_and_keeps_the_old_value() {
    let mut config = ExperimentConfig::default();
    assert!(config.set(Param::M, "0").is_err());
    assert!(config.set(Param::M, "2.5").is_err());
    assert!(config.set(Param::XNorm, "51").is_err());
    assert!(config.set(Param::Estimators, "prf,nope").is_err());
    assert!(config.set(Param::Hyperbolic, "maybe").is_err());
    assert!(config.set(Param::D, &"9".repeat(100)).is_err());
    assert_eq!(config, ExperimentConfig::default());
}

#[test]
fn work_limit_refuses_huge_runs_but_order_of_the_query_does_not_matter() {
    let mut config = ExperimentConfig::default();
    config.set(Param::D, "100").unwrap();
    let error = config.set(Param::M, "16384").unwrap_err();
    assert_eq!(config.m, 1024, "a refused value changes nothing");
    assert!(error.message.contains("multiply-adds"));
    // d small first or last: both orders accept m = 16384 with d = 2.
    let (a, na) = ExperimentConfig::from_query("m=16384&d=2");
    let (b, nb) = ExperimentConfig::from_query("d=2&m=16384");
    assert!(na.is_empty() && nb.is_empty(), "{na:?} {nb:?}");
    assert_eq!(a, b);
    assert_eq!(a.m, 16384);
}

#[test]
fn a_slider_dragged_past_the_work_limit_stops_at_it() {
    let mut config = ExperimentConfig::default();
    config.set(Param::D, "10").unwrap();
    config.set(Param::M, "16384").unwrap();
    // d = 512 is far beyond the limit at m = 16384: the largest d within it is applied.
    let applied = config.set_within_work_limit(Param::D, "512").unwrap();
    let d: usize = applied.clone().unwrap().parse().unwrap();
    assert_eq!(config.d, d);
    assert!(config.work() <= MAX_WORK);
    let mut one_more = config.clone();
    assert!(one_more.set(Param::D, &(d + 1).to_string()).is_err());
    // Dragged further while at the limit: it stays there, with the same note.
    assert_eq!(
        config.set_within_work_limit(Param::D, "300").unwrap(),
        applied
    );
    assert_eq!(config.d, d);
    // Within the limit nothing is clamped; a bad value is still refused as set refuses it.
    assert_eq!(config.set_within_work_limit(Param::D, "10").unwrap(), None);
    assert!(config.set_within_work_limit(Param::D, "abc").is_err());
    assert!(config.set_within_work_limit(Param::D, "0").is_err());
    assert_eq!(config.d, 10);
}

#[test]
fn validate_rejects_what_set_would_reject() {
    let mut config = ExperimentConfig::default();
    assert!(config.validate().is_ok());
    config.m = 0;
    assert!(config.validate().is_err());
    let unsorted = ExperimentConfig {
        estimators: ["hcexp-mean", "prf-hyp"]
            .iter()
            .filter_map(|id| EstimatorId::from_id(id))
            .collect(),
        ..ExperimentConfig::default()
    };
    assert!(unsorted.validate().is_err());
    let nan_norm = ExperimentConfig {
        x_norm: f64::NAN,
        ..ExperimentConfig::default()
    };
    assert!(nan_norm.validate().is_err());
}

/// Each text parameter's `check` (what validation runs, without parsers) accepts exactly what
/// a round trip through its own parser keeps: forged values of every kind, one at a time.
#[test]
fn every_text_check_agrees_with_its_parsers_round_trip() {
    use crate::numerics::attention::methods::MethodId;
    let method = |id: &str| MethodId::from_id(id).unwrap();
    let estimator = |id: &str| EstimatorId::from_id(id).unwrap();
    let base = ExperimentConfig::default();
    let forged: Vec<(&str, ExperimentConfig)> = vec![
        ("default", base.clone()),
        (
            "xscale NaN",
            ExperimentConfig {
                x_mean_scale: Some(f64::NAN),
                ..base.clone()
            },
        ),
        (
            "yscale too big",
            ExperimentConfig {
                y_mean_scale: Some(1e9),
                ..base.clone()
            },
        ),
        (
            "yscale in range",
            ExperimentConfig {
                y_mean_scale: Some(2.0),
                ..base.clone()
            },
        ),
        (
            "est empty",
            ExperimentConfig {
                estimators: vec![],
                ..base.clone()
            },
        ),
        (
            "est repeated",
            ExperimentConfig {
                estimators: vec![estimator("rff"), estimator("rff")],
                ..base.clone()
            },
        ),
        (
            "est out of order",
            ExperimentConfig {
                estimators: vec![estimator("rff"), estimator("prf-pos")],
                ..base.clone()
            },
        ),
        (
            "probe beyond",
            ExperimentConfig {
                probe: Some(20_000),
                ..base.clone()
            },
        ),
        (
            "probe last",
            ExperimentConfig {
                probe: Some(19_999),
                ..base.clone()
            },
        ),
        ("methods empty", {
            let mut c = base.clone();
            c.attention.methods.clear();
            c
        }),
        ("methods out of order", {
            let mut c = base.clone();
            c.attention.methods = vec![method("ra"), method("taylor")];
            c
        }),
        ("methods in order", {
            let mut c = base.clone();
            c.attention.methods = vec![method("taylor"), method("ra")];
            c
        }),
    ];
    for (what, config) in &forged {
        for param in Param::every() {
            let Some(round_trip) = param.round_trip_keeps(config) else {
                continue;
            };
            assert_eq!(
                param.check_passes(config),
                round_trip,
                "{what}: `{}`'s check and its parser disagree",
                param.key()
            );
        }
    }
    // And validation refuses each forged value, naming its key.
    for (what, key) in [
        ("xscale NaN", "xscale"),
        ("est repeated", "est"),
        ("probe beyond", "probe"),
        ("methods out of order", "methods"),
    ] {
        let config = &forged.iter().find(|(w, _)| *w == what).unwrap().1;
        assert_eq!(config.validate().unwrap_err().key, key, "{what}");
    }
}

#[test]
fn the_legacy_orf_link_is_a_coupling() {
    use crate::numerics::projections::couplings::Coupling;
    let coupling = |query: &str| {
        let (config, notices) = ExperimentConfig::from_query(query);
        assert!(notices.is_empty(), "{query}: {notices:?}");
        config.coupling
    };
    assert_eq!(coupling(""), Coupling::Iid);
    assert_eq!(coupling("orf=1"), Coupling::Orthogonal);
    assert_eq!(coupling("orf=0"), Coupling::Iid);
    assert_eq!(coupling("coupling=simplex"), Coupling::Simplex);
    // Applied after the rest, whatever its place: `orf=1` wins, `orf=0` only undoes blocks.
    assert_eq!(coupling("orf=1&coupling=rqmc"), Coupling::Orthogonal);
    assert_eq!(coupling("orf=0&coupling=rqmc"), Coupling::Rqmc);
    assert_eq!(coupling("coupling=orthogonal&orf=0"), Coupling::Iid);
    // A link writes the new key only, and reads back to the same configuration.
    let (config, _) = ExperimentConfig::from_query("orf=1");
    let query = config.to_query();
    assert!(
        query.contains("coupling=orthogonal") && !query.contains("orf="),
        "{query}"
    );
    assert_eq!(ExperimentConfig::from_query(&query).0, config);
    let (_, notices) = ExperimentConfig::from_query("coupling=sobol");
    assert_eq!(notices.len(), 1);
    assert!(
        notices[0]
            .message
            .contains("iid, orthogonal, simplex or rqmc"),
        "{notices:?}"
    );
}

/// A link's text longer than the other parameters' 256-byte limit (up to 2,000 characters) and
/// an edited retrieval set read back; the model swap's layers read `all`, `none` and lists.
#[test]
fn long_texts_retrieval_sets_and_swap_layers_read_back_from_a_link() {
    let mut config = ExperimentConfig {
        view: View::Attention,
        ..ExperimentConfig::default()
    };
    config.attention.source = HeadSource::Text;
    config.attention.text = "Attention compares every query with every key. ".repeat(30);
    config.attention.retrieval = "Where do cats sleep?\nOn the sofa.\nRates rose.".to_string();
    config.attention.swap_layers = vec![0, 5];
    let query = config.to_query();
    assert!(query.contains("swap=0%2C5"), "{query}");
    let (read, notices) = ExperimentConfig::from_query(&query);
    assert!(notices.is_empty(), "{notices:?}");
    assert_eq!(read.attention.text, config.attention.text);
    assert_eq!(read.attention.retrieval, config.attention.retrieval);
    assert_eq!(read.attention.swap_layers, vec![0, 5]);
    // The preset is left out of a link.
    assert!(
        !ExperimentConfig::default()
            .to_query()
            .contains("retrieval=")
    );
    for (text, layers) in [
        ("all", vec![0, 1, 2, 3, 4, 5]),
        ("none", vec![]),
        ("3,1,3", vec![1, 3]),
    ] {
        let (read, notices) = ExperimentConfig::from_query(&format!("swap={text}"));
        assert!(notices.is_empty(), "{text}: {notices:?}");
        assert_eq!(read.attention.swap_layers, layers, "{text}");
    }
    for bad in [
        "swap=6",
        "swap=one",
        "retrieval=only%20a%20query",
        "swapdraws=0",
        "hhsteps=1001",
    ] {
        let (read, notices) = ExperimentConfig::from_query(bad);
        assert_eq!(notices.len(), 1, "{bad}");
        assert_eq!(read, ExperimentConfig::default(), "{bad}");
    }
}

#[test]
fn lm_layers_read_lists_ranges_and_all_refuse_nonsense_and_print_back() {
    assert_eq!(parse_layers("all", 4), Ok(vec![0, 1, 2, 3]));
    assert_eq!(parse_layers(" 2 ", 4), Ok(vec![2]));
    assert_eq!(parse_layers("3,0-1,1", 4), Ok(vec![0, 1, 3]));
    for bad in ["", "4", "-1", "2-1", "a", "1,,2", "1-", "0-4"] {
        let e = parse_layers(bad, 4).expect_err(bad);
        assert!(e.contains("from 0 to 3"), "{bad}: {e}");
    }
    for layers in [
        vec![0, 1, 2, 5, 7, 8, 29],
        vec![3],
        (0..LM_LAYERS).collect(),
    ] {
        let text = lm_layers_text(&layers);
        assert_eq!(parse_layers(&text, LM_LAYERS), Ok(layers), "{text}");
    }
    assert_eq!(lm_layers_text(&[0, 1, 2, 5, 7, 8, 29]), "0-2,5,7-8,29");
}

/// The language model's heads (`src=lm`): its 30 layers and 9 heads read from a link in any
/// order; a layer or head the source's model lacks is refused with its range, and switching
/// the source keeps the head where the new model has it, else its last; only the methods with a
/// causal form are computed on it, the heatmaps' method moved to the first of them.
#[test]
fn the_language_models_heads_have_their_own_shape_and_causal_methods() {
    let (config, notices) = ExperimentConfig::from_query(
        "layer=29&head=8&view=attention&src=lm&methods=prf-pos,nystrom,ra&focus=nystrom",
    );
    assert!(notices.is_empty(), "{notices:?}");
    assert_eq!(config.attention.source, HeadSource::Lm);
    assert_eq!((config.attention.layer, config.attention.head), (29, 8));
    assert!(config.validate().is_ok());

    let (_, notices) = ExperimentConfig::from_query("src=minilm&layer=20");
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert_eq!(notices[0].key, "layer");
    assert!(
        notices[0]
            .message
            .contains("all-MiniLM-L6-v2 has layers 0 to 5"),
        "{}",
        notices[0].message
    );
    let (_, notices) = ExperimentConfig::from_query("src=lm&head=10");
    assert!(
        notices[0].message.contains("SmolLM2-135M has heads 0 to 8"),
        "{}",
        notices[0].message
    );

    let mut switched = config.clone();
    switched.set(Param::Source, "minilm").unwrap();
    assert_eq!((switched.attention.layer, switched.attention.head), (5, 8));
    let mut back = switched.clone();
    back.set(Param::Head, "11").unwrap();
    back.set(Param::Source, "lm").unwrap();
    assert_eq!((back.attention.layer, back.attention.head), (5, 8));

    // A message from a worker is checked the same way.
    let mut forged = config.clone();
    forged.attention.source = HeadSource::Text;
    assert_eq!(forged.validate().unwrap_err().key, "layer");

    let computed = config.with_causal_methods().unwrap();
    let ids: Vec<&str> = computed.attention.methods.iter().map(|m| m.id()).collect();
    assert_eq!(ids, ["prf-pos"]);
    assert_eq!(computed.attention.focus.id(), "prf-pos");
    let left_out: Vec<&str> = config
        .attention
        .masked_out_methods()
        .iter()
        .map(|m| m.id())
        .collect();
    assert_eq!(left_out, ["ra", "nystrom"]);
    let (none_causal, _) = ExperimentConfig::from_query("view=attention&src=lm&methods=nystrom");
    assert!(none_causal.with_causal_methods().is_err());
    // Bidirectional sources compute every chosen method.
    let (minilm, _) = ExperimentConfig::from_query("src=minilm&methods=prf-pos,nystrom");
    assert_eq!(minilm.attention.computed_methods().len(), 2);
    assert!(minilm.attention.masked_out_methods().is_empty());
}
