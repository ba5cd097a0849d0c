//! Directive builder chains written out in a tool body:
//! `ToolOutput::text(..).directive(Directive::complete()).directive(Directive::go_to::<F>())`
//! type-checks (`directive(..)` merges into what is set, and a tool's declared return
//! type carries no state), but holds two positions (or `reply` with `abort`). Where the
//! chain is written in one expression the macro sees it and rejects it; chains built
//! across statements are caught at run time (`ToolError::InvalidDirective`). A typed
//! `PreDirective` records its position and reply in its type, so the compiler rejects
//! the same chains in hooks in any form.

use syn::visit::Visit;

use crate::diag::Errors;

/// Constructors of `Directive` that set a position.
const POSITIONS: &[(&str, &str)] = &[
    ("go_to", "go_to"),
    ("go_to_step", "go_to_step"),
    ("complete", "complete"),
    ("complete_then", "complete"),
    ("abort", "abort"),
    ("abort_and_clear", "abort"),
    ("reset", "reset"),
    ("reset_clearing_data", "reset"),
];

/// What a (sub)chain is known to hold.
#[derive(Default, Clone, Copy)]
struct Shape {
    position: Option<&'static str>,
    aborts: bool,
    reply: bool,
}

/// The last two path segments of a call's fn (`Directive::abort`).
fn call_path(e: &syn::Expr) -> Option<(String, String)> {
    let syn::Expr::Call(c) = e else { return None };
    let syn::Expr::Path(p) = &*c.func else {
        return None;
    };
    let segs: Vec<String> = p
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    match segs.as_slice() {
        [.., ty, f] => Some((ty.clone(), f.clone())),
        _ => None,
    }
}

/// The shape of an expression built from `Directive::..` constructors and methods.
fn directive_shape(e: &syn::Expr) -> Shape {
    match e {
        syn::Expr::MethodCall(m) => {
            let mut s = directive_shape(&m.receiver);
            if m.method == "reply" {
                s.reply = true;
            }
            s
        }
        syn::Expr::Paren(p) => directive_shape(&p.expr),
        syn::Expr::Call(c) => match call_path(e) {
            Some((ty, f)) if ty == "Directive" => {
                let mut s = Shape::default();
                if let Some((_, pos)) = POSITIONS.iter().find(|(n, _)| *n == f) {
                    s.position = Some(pos);
                    s.aborts = *pos == "abort";
                }
                if f == "complete_then" {
                    s.aborts = c.args.first().is_some_and(|n| directive_shape(n).aborts);
                }
                s.reply = f == "reply" || f == "say";
                s
            }
            _ => Shape::default(),
        },
        _ => Shape::default(),
    }
}

/// The shape of a `PreDirective` / `ToolOutput` chain (`None` for other chains).
fn builder_shape(e: &syn::Expr) -> Option<Shape> {
    match e {
        syn::Expr::MethodCall(m) => {
            let mut s = builder_shape(&m.receiver)?;
            if m.method == "reply" {
                s.reply = true;
            } else if m.method == "directive"
                && let Some(arg) = m.args.first()
            {
                let d = directive_shape(arg);
                s.position = s.position.or(d.position);
                s.aborts |= d.aborts;
                s.reply |= d.reply;
            }
            Some(s)
        }
        syn::Expr::Paren(p) => builder_shape(&p.expr),
        syn::Expr::Call(_) => match call_path(e) {
            Some((ty, _)) if ty == "PreDirective" || ty == "ToolOutput" => Some(Shape::default()),
            _ => None,
        },
        _ => None,
    }
}

struct Chains<'e> {
    errors: &'e mut Errors,
}

impl<'ast> Visit<'ast> for Chains<'_> {
    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        if let Some(before) = builder_shape(&m.receiver) {
            if m.method == "directive"
                && let Some(arg) = m.args.first()
            {
                let d = directive_shape(arg);
                if let (Some(first), Some(second)) = (before.position, d.position) {
                    self.errors.push_spanned(
                        arg,
                        format!("this directive already has a position field (`{first}`): `.directive(..)` merges, and a directive holds at most one of `go_to`, `go_to_step`, `complete`, `abort`, `reset`; this `{second}` would override or be dropped. To move on after completing the flow, use `Directive::complete_then(next)`"),
                    );
                } else if (before.reply || d.reply) && (before.aborts || d.aborts) {
                    self.errors.push_spanned(
                        arg,
                        "`reply` cannot be combined with `abort`: an aborted conversation delivers no reply; drop the `reply`, or use `complete` instead of `abort`",
                    );
                }
            } else if m.method == "reply" && before.aborts {
                self.errors.push(
                    m.method.span(),
                    "`reply` cannot be combined with `abort`: an aborted conversation delivers no reply; drop the `reply`, or use `complete` instead of `abort`",
                );
            }
        }
        syn::visit::visit_expr_method_call(self, m);
    }
}

/// Report the conflicting directive chains written in `block`.
pub fn check_block(block: &syn::Block, errors: &mut Errors) {
    Chains { errors }.visit_block(block);
}
