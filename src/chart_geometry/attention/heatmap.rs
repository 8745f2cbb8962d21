//! The attention heatmaps' geometry: the colour scales (sequential for probabilities,
//! diverging for differences), the colour bar's labels, the square layout and index ticks.

use crate::chart_geometry::tick;

/// How a heatmap maps values to colours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeatScale {
    /// Sequential white → dark blue (ColorBrewer Blues, colour-blind safe) from 0 to the
    /// largest value, on a square-root scale so that small probabilities are visible.
    Probability,
    /// Diverging blue – white – red (ColorBrewer RdBu), symmetric at ±max |value|.
    Difference,
}

/// ColorBrewer Blues, 9 classes: white to dark blue.
const BLUES: [[u8; 3]; 9] = [
    [247, 251, 255],
    [222, 235, 247],
    [198, 219, 239],
    [158, 202, 225],
    [107, 174, 214],
    [66, 146, 198],
    [33, 113, 181],
    [8, 81, 156],
    [8, 48, 107],
];

/// ColorBrewer RdBu, 11 classes, from blue (negative) through white to red (positive).
const BLUE_WHITE_RED: [[u8; 3]; 11] = [
    [5, 48, 97],
    [33, 102, 172],
    [67, 147, 195],
    [146, 197, 222],
    [209, 229, 240],
    [247, 247, 247],
    [253, 219, 199],
    [244, 165, 130],
    [214, 96, 77],
    [178, 24, 43],
    [103, 0, 31],
];

/// The colour of cells without a finite value.
pub const MISSING_COLOUR: [u8; 3] = [170, 170, 170];

/// The colour at `t ∈ [0, 1]` of a palette, interpolated linearly between its stops.
fn interpolate(palette: &[[u8; 3]], t: f64) -> [u8; 3] {
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    let position = t * (palette.len() - 1) as f64;
    let below = (position.floor() as usize).min(palette.len() - 1);
    let above = (below + 1).min(palette.len() - 1);
    let f = position - below as f64;
    let mix = |a: u8, b: u8| (f64::from(a) + f * (f64::from(b) - f64::from(a))).round() as u8;
    let (a, b) = (palette[below], palette[above]);
    [mix(a[0], b[0]), mix(a[1], b[1]), mix(a[2], b[2])]
}

impl HeatScale {
    /// The value at the top of the colour scale: the largest finite value (Probability) or
    /// the largest finite |value| (Difference); 0 without one.
    pub fn max_of(self, matrix: &[f64]) -> f64 {
        let finite = matrix.iter().copied().filter(|v| v.is_finite());
        match self {
            HeatScale::Probability => finite.fold(0.0, f64::max),
            HeatScale::Difference => finite.map(f64::abs).fold(0.0, f64::max),
        }
    }

    /// Where `value` sits on the colour scale, from 0 (bottom) to 1 (top), for a scale up to
    /// `max`; `None` for NaN. Infinities and values beyond the scale take its ends.
    pub fn position(self, value: f64, max: f64) -> Option<f64> {
        if value.is_nan() {
            return None;
        }
        let ratio = if max > 0.0 && max.is_finite() {
            value / max
        } else {
            // An all-zero matrix: every finite value at the scale's neutral point.
            value.signum() * f64::from(u8::from(value.is_infinite()))
        };
        Some(match self {
            HeatScale::Probability => ratio.clamp(0.0, 1.0).sqrt(),
            HeatScale::Difference => 0.5 + 0.5 * ratio.clamp(-1.0, 1.0),
        })
    }

    /// The colour at a position of the scale (see [`Self::position`]).
    pub fn colour_at(self, position: f64) -> [u8; 3] {
        match self {
            HeatScale::Probability => interpolate(&BLUES, position),
            HeatScale::Difference => interpolate(&BLUE_WHITE_RED, position),
        }
    }

    /// The colour of a cell with `value` on a scale up to `max`: grey for NaN.
    pub fn colour(self, value: f64, max: f64) -> [u8; 3] {
        self.position(value, max)
            .map_or(MISSING_COLOUR, |p| self.colour_at(p))
    }

    /// The colour bar's three labelled values, as `(position from 0 at the bottom to 1 at
    /// the top, label)`: 0, max/4 (halfway on the square-root scale) and max; or −max, 0
    /// and +max.
    pub fn bar_labels(self, max: f64) -> [(f64, String); 3] {
        let max = if max.is_finite() { max.max(0.0) } else { 0.0 };
        match self {
            HeatScale::Probability => [
                (0.0, "0".to_string()),
                (0.5, tick(max / 4.0)),
                (1.0, tick(max)),
            ],
            HeatScale::Difference => [
                (0.0, tick(-max)),
                (0.5, "0".to_string()),
                (1.0, format!("+{}", tick(max))),
            ],
        }
    }

    /// The colour bar's caption, one line each: the square-root scale of probabilities, and
    /// what grey means when some cell has no finite value.
    pub fn bar_caption(self, any_missing: bool) -> Vec<&'static str> {
        let mut lines = Vec::new();
        if self == HeatScale::Probability {
            lines.push("√ scale");
        }
        if any_missing {
            lines.push("grey: NaN");
        }
        lines
    }
}

/// Where a heatmap goes on its canvas (CSS pixels): a square plot of `side` at
/// (`left`, `top`) and the colour bar at `bar_left`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HeatmapLayout {
    pub left: f64,
    pub top: f64,
    pub side: f64,
    pub bar_left: f64,
    pub bar_width: f64,
}

impl HeatmapLayout {
    /// Room for the title above, the index labels and "query i" on the left, the index
    /// labels and "key j" below, the colour bar and its labels on the right.
    pub const TITLE: f64 = 26.0;
    pub const LEFT: f64 = 52.0;
    pub const BOTTOM: f64 = 40.0;
    pub const RIGHT: f64 = 84.0;
    pub const BAR_GAP: f64 = 12.0;
    pub const BAR_WIDTH: f64 = 14.0;

    /// The layout on a `width` × `height` CSS-pixel canvas: the largest square plot that
    /// fits (at least 40 px), centred horizontally.
    pub fn new(width: f64, height: f64) -> Self {
        let room_w = width - Self::LEFT - Self::RIGHT - 8.0;
        let room_h = height - Self::TITLE - Self::BOTTOM - 6.0;
        let side = room_w.min(room_h);
        let side = if side.is_finite() {
            side.max(40.0)
        } else {
            40.0
        };
        let total = Self::LEFT + side + Self::RIGHT;
        let left = ((width - total) / 2.0).max(0.0) + Self::LEFT;
        Self {
            left,
            top: Self::TITLE,
            side,
            bar_left: left + side + Self::BAR_GAP,
            bar_width: Self::BAR_WIDTH,
        }
    }

    /// The cell `(row i, column j)` of an `n × n` heatmap under the point `(x, y)` (CSS pixels
    /// on the canvas), or `None` outside the plot.
    pub fn cell_at(&self, x: f64, y: f64, n: usize) -> Option<(usize, usize)> {
        let (fx, fy) = ((x - self.left) / self.side, (y - self.top) / self.side);
        if n == 0 || !(0.0..1.0).contains(&fx) || !(0.0..1.0).contains(&fy) {
            return None;
        }
        let cell = |f: f64| ((f * n as f64) as usize).min(n - 1);
        Some((cell(fy), cell(fx)))
    }
}

/// The label of index `k` on a heatmap's axis: the token itself when the rows are tokens
/// (shortened to [`TOKEN_LABEL_CHARS`] characters with an ellipsis), else the index.
pub fn tick_label(k: usize, tokens: &[String]) -> String {
    match tokens.get(k) {
        Some(token) if token.chars().count() > TOKEN_LABEL_CHARS => {
            let short: String = token.chars().take(TOKEN_LABEL_CHARS - 1).collect();
            format!("{short}…")
        }
        Some(token) => token.clone(),
        None => k.to_string(),
    }
}

/// Characters of a token shown on a heatmap's axis (the left margin holds about seven).
pub const TOKEN_LABEL_CHARS: usize = 7;

/// The indices labelled on a heatmap's axes: every 1, 2, 5, 10, 20, 50, … so that at most
/// six are labelled.
pub fn index_ticks(n: usize) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    // 1, 2, 5, 10, 20, 50, … (checked: usize has 32 bits in WebAssembly).
    let mut power = 1usize;
    loop {
        for m in [1, 2, 5] {
            let Some(step) = power.checked_mul(m) else {
                return vec![0];
            };
            if n.div_ceil(step) <= 6 {
                return (0..n).step_by(step).collect();
            }
        }
        let Some(next) = power.checked_mul(10) else {
            return vec![0];
        };
        power = next;
    }
}
