//! The attention view's controls: the data (synthetic or a real head), the methods, their
//! sizes and the method shown in the heatmaps.

use leptos::ev;
use leptos::prelude::*;

use crate::lab::config::{
    ExperimentConfig, HEAD_LAYERS, HEADS_PER_LAYER, HeadSource, LM_HEADS, LM_LAYERS, Param,
};
use crate::numerics::attention::methods::MethodId;
use crate::numerics::estimators::Family;
use crate::ui::controls::{NumberControl, SeedControl, Slider, commit};

/// The view's controls: data, methods and their sizes.
#[component]
pub(super) fn AttentionControls(
    config: ReadSignal<ExperimentConfig>,
    set_config: WriteSignal<ExperimentConfig>,
) -> impl IntoView {
    let (error, set_error) = signal(None::<String>);
    let synthetic = move || config.with(|c| c.attention.source == HeadSource::Synthetic);
    let is_lm = move || config.with(|c| c.attention.source == HeadSource::Lm);
    let set_source = move |ev: ev::Event| {
        let value = event_target_value(&ev);
        set_error.set(commit(config, set_config, Param::Source, &value).map(|e| e.to_string()));
    };
    let toggle = move |method: MethodId, on: bool| {
        let mut chosen = config.with_untracked(|c| c.attention.methods.clone());
        chosen.retain(|m| *m != method);
        if on {
            chosen.push(method);
        }
        let list: Vec<&str> = chosen.iter().map(|m| m.id()).collect();
        set_error.set(
            commit(config, set_config, Param::Methods, &list.join(",")).map(|e| e.to_string()),
        );
    };
    let method_box = move |method: MethodId| {
        let checked = move || config.with(|c| c.attention.methods.contains(&method));
        let [r, g, b] = method.colour();
        view! {
            <label class="check" title=format!("{}, {} ({})", method.label(), method.source(), method.id())>
                <input
                    type="checkbox"
                    name=format!("method-{}", method.id())
                    data-method=method.id()
                    prop:checked=checked
                    on:change=move |ev| toggle(method, event_target_checked(&ev))
                />
                <span class="swatch" style=format!("background:rgb({r},{g},{b})")></span>
                <span>
                    {method.label()}
                    {method.is_quadratic().then_some(" (O(L²))")}
                    {move || (is_lm() && !method.has_causal_form()).then_some(" (no causal form: left out)")}
                </span>
            </label>
        }
    };
    let kernel_groups = Family::ALL
        .into_iter()
        .map(|family| {
            let boxes = MethodId::all()
                .filter(|m| m.estimator().is_some_and(|e| e.info().family() == family))
                .map(method_box)
                .collect_view();
            view! { <fieldset class="group"><legend>{family.label()}</legend>{boxes}</fieldset> }
        })
        .collect_view();
    let others = MethodId::all()
        .filter(|m| m.estimator().is_none())
        .map(method_box)
        .collect_view();
    let set_focus = move |ev: ev::Event| {
        let value = event_target_value(&ev);
        set_error.set(commit(config, set_config, Param::Focus, &value).map(|e| e.to_string()));
    };
    view! {
        <h2>"Data"</h2>
        <label class="field">
            <span>"queries, keys, values"</span>
            <select name="src" on:change=set_source prop:value=move || config.with(|c| c.get(Param::Source))>
                <option value="synthetic">"synthetic (the kernel view's distributions)"</option>
                <option value="minilm">"real heads: all-MiniLM-L6-v2"</option>
                <option value="text">"your text through all-MiniLM-L6-v2"</option>
                <option value="lm">"your text through SmolLM2-135M (causal)"</option>
            </select>
        </label>
        <Show
            when=synthetic
            fallback=move || view! {
                <Show when=move || config.with(|c| c.attention.source == HeadSource::Minilm)>
                    <NumberControl param=Param::Passage config set_config slider=Slider { min: 0.0, max: 1.0, step: 1.0 }/>
                </Show>
                // The sliders span the source's model: 6 × 12 heads, or 30 × 9.
                <Show
                    when=is_lm
                    fallback=move || view! {
                        <NumberControl param=Param::Layer config set_config slider=Slider { min: 0.0, max: (HEAD_LAYERS - 1) as f64, step: 1.0 }/>
                        <NumberControl param=Param::Head config set_config slider=Slider { min: 0.0, max: (HEADS_PER_LAYER - 1) as f64, step: 1.0 }/>
                    }
                >
                    <NumberControl param=Param::Layer config set_config slider=Slider { min: 0.0, max: (LM_LAYERS - 1) as f64, step: 1.0 }/>
                    <NumberControl param=Param::Head config set_config slider=Slider { min: 0.0, max: (LM_HEADS - 1) as f64, step: 1.0 }/>
                </Show>
            }
        >
            <NumberControl param=Param::Len config set_config slider=Slider { min: 16.0, max: 1024.0, step: 16.0 }/>
            <NumberControl param=Param::D config set_config slider=Slider { min: 2.0, max: 128.0, step: 1.0 }/>
            <NumberControl param=Param::ValueDim config set_config/>
            <NumberControl param=Param::XNorm config set_config slider=Slider { min: 0.1, max: 10.0, step: 0.1 }/>
            <NumberControl param=Param::YNorm config set_config slider=Slider { min: 0.1, max: 10.0, step: 0.1 }/>
            <NumberControl param=Param::MeanScale config set_config/>
        </Show>
        <SeedControl config set_config/>
        <h2>"Methods"</h2>
        <NumberControl param=Param::Features config set_config slider=Slider { min: 1.0, max: 1024.0, step: 1.0 }/>
        {kernel_groups}
        <fieldset class="group"><legend>"attention level (seeds 001, 003, 004)"</legend>{others}</fieldset>
        <NumberControl param=Param::Degree config set_config slider=Slider { min: 1.0, max: 6.0, step: 1.0 }/>
        <NumberControl param=Param::Draws config set_config/>
        <NumberControl param=Param::RaSamples config set_config/>
        <NumberControl param=Param::Landmarks config set_config/>
        <NumberControl param=Param::Window config set_config/>
        <NumberControl param=Param::TopK config set_config/>
        <label class="field">
            <span>"method in the heatmaps"</span>
            <select name="focus" on:change=set_focus prop:value=move || config.with(|c| c.get(Param::Focus))>
                {move || config.with(|c| c.attention.methods.iter().map(|m| view! {
                    <option value=m.id()>{m.label()}</option>
                }).collect_view())}
            </select>
        </label>
        {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
        <p class="work">{move || config.with(|c| format!("{:.2e} multiply-adds per attention recompute", c.attention.work(c.d)))}</p>
    }
}
