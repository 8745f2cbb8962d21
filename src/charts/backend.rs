//! The charts' drawing backend: plotters-canvas's `CanvasBackend` with text measured by the
//! canvas itself.
//!
//! Why: plotters measures a label (to place tick labels and titles) through its web font code,
//! which appends a `<span>` to the page's body, reads its `offsetHeight` and removes it. Each
//! read forces the browser to lay out the whole page, which every earlier append and removal
//! has invalidated. On the kernel view, that was 46 ms of every slider step's 60–87 ms
//! main-thread task (Chromium profile). The canvas's `measureText` gives the same box without
//! touching the page's layout.

use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind,
};
use plotters_canvas::CanvasBackend;
use wasm_bindgen::JsCast;
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement};

/// The canvas backend's error (plotters-canvas does not export its name).
type CanvasError = <CanvasBackend as DrawingBackend>::ErrorType;

/// A `CanvasBackend` whose text size comes from the canvas's `measureText` (see the module's
/// documentation); everything else is the canvas backend's.
pub struct LabCanvas {
    inner: CanvasBackend,
    context: CanvasRenderingContext2d,
}

impl LabCanvas {
    /// The backend of `canvas`, or `None` when it has no 2D context.
    pub fn new(canvas: &HtmlCanvasElement) -> Option<Self> {
        let context = canvas
            .get_context("2d")
            .ok()??
            .dyn_into::<CanvasRenderingContext2d>()
            .ok()?;
        let inner = CanvasBackend::with_canvas_object(canvas.clone())?;
        Some(Self { inner, context })
    }
}

/// The CSS font of a text style, as the canvas backend sets it to draw.
fn css_font<S: BackendTextStyle>(style: &S) -> String {
    format!(
        "{} {}px {}",
        style.style().as_str(),
        style.size(),
        style.family().as_str()
    )
}

impl DrawingBackend for LabCanvas {
    type ErrorType = CanvasError;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<CanvasError>> {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<CanvasError>> {
        self.inner.present()
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        style: BackendColor,
    ) -> Result<(), DrawingErrorKind<CanvasError>> {
        self.inner.draw_pixel(point, style)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<CanvasError>> {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<CanvasError>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<CanvasError>> {
        self.inner.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<CanvasError>> {
        self.inner.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<CanvasError>> {
        self.inner.fill_polygon(vert, style)
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<CanvasError>> {
        self.inner.draw_text(text, style, pos)
    }

    /// The text's advance width and its font's height (ascent + descent), as the span plotters
    /// measured gave them (an inline block's width and its line box's height), from the canvas.
    fn estimate_text_size<S: BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> Result<(u32, u32), DrawingErrorKind<CanvasError>> {
        // The drawing code sets its own font before each text: saved and restored around this.
        self.context.save();
        self.context.set_font(&css_font(style));
        let measured = self.context.measure_text(text);
        self.context.restore();
        // measureText throws on a detached context only; an em-based box then keeps the layout.
        let (width, height) = match measured {
            Ok(m) => (
                m.width(),
                m.font_bounding_box_ascent() + m.font_bounding_box_descent(),
            ),
            Err(_) => (
                0.6 * style.size() * text.chars().count() as f64,
                style.size(),
            ),
        };
        // A browser without the font box (none the lab supports) gets the em size.
        let height = if height.is_finite() && height > 0.0 {
            height
        } else {
            style.size()
        };
        Ok((width.ceil().max(0.0) as u32, height.ceil() as u32))
    }
}
