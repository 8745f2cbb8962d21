use super::*;

/// A small synthetic configuration: four methods (one without a kernel estimate), 32
/// tokens, 16 features.
fn small_config() -> ExperimentConfig {
    let mut config = ExperimentConfig::default();
    config.attention.source = HeadSource::Synthetic;
    config.attention.len = 32;
    config.attention.features = 16;
    config.attention.methods = ["prf-pos", "hcexp-var", "ra", "rff"]
        .iter()
        .filter_map(|id| MethodId::from_id(id))
        .collect();
    config
}

/// Split into shares (evenly or not, some empty) and merged in order, the part is the
/// whole run's bit for bit (NaN included: compared by their printed form).
#[test]
fn shares_merged_are_the_whole_run() {
    let config = small_config();
    let whole = kernel_vs_attention(&config, None).unwrap();
    assert_eq!(whole.problems.len(), SYNTHETIC_PROBLEMS);
    assert_eq!(whole.without_kernel.len(), 1, "{whole:?}");
    for count in [2, 5, 20] {
        let shares: Vec<KernelVsAttention> = (0..count)
            .map(|index| {
                kernel_vs_attention_share(&config, None, ProblemShare { index, count }).unwrap()
            })
            .collect();
        let sizes: Vec<usize> = shares.iter().map(|s| s.problems.len()).collect();
        assert_eq!(sizes.iter().sum::<usize>(), SYNTHETIC_PROBLEMS, "{sizes:?}");
        let merged = KernelVsAttention::merge(shares).unwrap();
        assert_eq!(
            format!("{merged:?}"),
            format!("{whole:?}"),
            "{count} shares"
        );
    }
}

/// A share that does not exist is an error, not a panic; shares of other settings do not
/// merge; no share at all is an error.
#[test]
fn shares_that_do_not_belong_are_refused() {
    let config = small_config();
    for (index, count) in [(0, 0), (3, 3), (usize::MAX, 2)] {
        let share = ProblemShare { index, count };
        assert!(kernel_vs_attention_share(&config, None, share).is_err());
    }
    let half = |config: &ExperimentConfig, index| {
        kernel_vs_attention_share(config, None, ProblemShare { index, count: 2 }).unwrap()
    };
    let mut other = config.clone();
    other.attention.features = 64;
    assert!(KernelVsAttention::merge(vec![half(&config, 0), half(&other, 1)]).is_err());
    assert!(KernelVsAttention::merge(Vec::new()).is_err());
}

/// The rows planned before the part runs are the part's: its methods with their sizes, and the
/// methods left out for the budget (the window's Taylor-2 part alone has `1 + d + d²` features).
#[test]
fn planned_rows_are_the_parts_rows() {
    let mut config = small_config();
    config.attention.methods.extend(
        ["taylor", "window"]
            .iter()
            .filter_map(|id| MethodId::from_id(id)),
    );
    let ids = |ids: &[&str]| -> Vec<MethodId> {
        ids.iter().filter_map(|id| MethodId::from_id(id)).collect()
    };
    for (d, features, left_out) in [
        (4, 16, ids(&[])),
        (16, 16, ids(&["window"])),
        (16, 64, ids(&["taylor", "window"])),
    ] {
        config.d = d;
        config.attention.features = features;
        let report = kernel_vs_attention(&config, None).unwrap();
        let (rows, off_budget) = planned_rows(&config);
        let planned: Vec<(MethodId, usize)> = report
            .methods
            .iter()
            .copied()
            .zip(report.feature_sizes.iter().copied())
            .collect();
        assert_eq!(rows, planned, "d = {d}, D = {features}");
        assert_eq!(off_budget, report.off_budget, "d = {d}, D = {features}");
        assert_eq!(off_budget, left_out, "d = {d}, D = {features}");
    }
}

#[test]
fn spearman_of_orders() {
    assert_eq!(spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]), Some(1.0));
    assert_eq!(spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), Some(-1.0));
    // Ties share a rank; a constant list has no order.
    assert_eq!(spearman(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]), None);
    let rho = spearman(&[1.0, 2.0, 3.0, 4.0], &[1.0, 3.0, 2.0, 4.0]).unwrap();
    assert!((rho - 0.8).abs() < 1e-12, "{rho}");
    assert_eq!(spearman(&[1.0, 2.0], &[1.0, 2.0]), None);
}

#[test]
fn wins_and_agreement_count_problems() {
    let id = |s: &str| MethodId::from_id(s).unwrap();
    let report = KernelVsAttention {
        budget: 64,
        tokens: 128,
        problems: vec!["a".into(), "b".into(), "c".into()],
        methods: vec![id("prf-pos"), id("hcexp-var"), id("oprf")],
        feature_sizes: vec![64, 64, 64],
        // Kernel: hcexp-var best on a and b, oprf on c.
        kernel: vec![
            vec![3.0, 3.0, 3.0],
            vec![1.0, 1.0, 2.0],
            vec![2.0, 2.0, 1.0],
        ],
        // Attention: hcexp-var best on a, oprf on b and c.
        attention: vec![
            vec![0.3, 0.3, 0.3],
            vec![0.1, 0.2, 0.2],
            vec![0.2, 0.1, 0.1],
        ],
        bad_rows: vec![0, 0, 0],
        without_kernel: Vec::new(),
        off_budget: Vec::new(),
    };
    assert_eq!(report.attention_wins(), vec![0, 1, 2]);
    assert_eq!(report.kernel_wins(), vec![0, 2, 1]);
    assert_eq!(report.agreement(), 2);
    // ρ = 1, 0.5, 1 on the three problems.
    let rho = report.mean_spearman().unwrap();
    assert!((rho - 2.5 / 3.0).abs() < 1e-12, "{rho}");
    let summary = report.summary();
    assert!(
        summary.starts_with("Lowest attention error: oprf on 2 of 3 problems."),
        "{summary}"
    );
    assert!(
        summary.contains("lowest kernel MSE is hcexp-var's on 2 of 3"),
        "{summary}"
    );
    assert!(summary.contains("same method's on 2 of 3"), "{summary}");
    // A method without a kernel error joins the attention wins, not the kernel order.
    let mut with_nystrom = report.clone();
    with_nystrom.methods.push(id("nystrom"));
    with_nystrom.feature_sizes.push(16);
    with_nystrom.kernel.push(vec![f64::NAN; 3]);
    with_nystrom.attention.push(vec![0.05, 0.5, 0.5]);
    with_nystrom.bad_rows.push(0);
    assert_eq!(with_nystrom.attention_wins(), vec![0, 0, 2, 1]);
    assert_eq!(with_nystrom.kernel_wins(), vec![0, 2, 1, 0]);
    assert_eq!(with_nystrom.agreement(), 2);
    assert_eq!(with_nystrom.mean_spearman(), report.mean_spearman());
}
