//! What `#[flow]` reads: the flow attribute, its steps, their branch tables.

use proc_macro2::Span;

/// A branch condition.
pub enum Cond {
    /// `if |view| ...`: a code predicate over the step's view.
    If(syn::Expr),
    /// `when "..."`: a condition the model judges.
    When(syn::LitStr),
}

/// Where a branch (or `on_complete`) goes.
pub enum Target {
    /// `=> confirm`: a step of this flow.
    Step(syn::Ident),
    /// `=> FeedbackFlow`: another flow, by its type.
    Flow(syn::Path),
    /// `=> feedback::Step::ask`: a step of another flow, typed.
    CrossStep(syn::Path),
    /// `=> Directive::complete()`: a full post-LLM directive.
    Directive(syn::Expr),
}

/// One branch entry.
pub struct BranchEntry {
    /// Its conditions (ANDed); empty for `else`.
    pub conds: Vec<Cond>,
    /// The `else` keyword, for an unconditional entry.
    pub else_span: Option<Span>,
    /// Start of the entry (for errors).
    pub span: Span,
    /// The target.
    pub target: Target,
    /// Span of the target tokens.
    pub target_span: Span,
    /// `as "label"`.
    pub label: Option<syn::LitStr>,
    /// For a directive target: the steps of this flow it names (`Step::extra`), which
    /// it may jump to.
    pub named_steps: Vec<String>,
    /// For a directive target: it is a plain jump to its one named step
    /// (`Directive::go_to_step(Step::b)`), so it surely lands there and nowhere else.
    pub plain_jump: bool,
}

/// `branches(...)`.
pub struct Branches {
    /// The `branches` key.
    pub span: Span,
    /// Entries, top to bottom.
    pub entries: Vec<BranchEntry>,
}

/// A step's shape.
pub enum Shape {
    /// Rendered by the model.
    Model,
    /// `auto`: no model call.
    Auto(Span),
    /// `reply = ".."`: a verbatim message.
    Reply(syn::LitStr),
}

/// A list of field names with the span of its key.
#[derive(Default)]
pub struct FieldList {
    /// The key (`collect`), if given.
    pub key: Option<Span>,
    /// The names.
    pub idents: Vec<syn::Ident>,
}

/// A hook named by a path (`finalize = after_confirm`).
pub struct HookRef {
    /// The fn path.
    pub path: syn::Path,
    /// Whether the fn is declared `async` in the flow module (looked up by name).
    pub is_async: bool,
}

/// One `#[step]` fn.
pub struct StepDef {
    /// The fn name: the step id.
    pub ident: syn::Ident,
    /// The fn as written, without its `#[step]` attribute.
    pub func: syn::ItemFn,
    /// The shape.
    pub shape: Shape,
    /// `prompt = ".."` and the key span.
    pub prompt: Option<(Span, syn::LitStr)>,
    /// `collect(..)`.
    pub collect: FieldList,
    /// `requires(..)`.
    pub requires: FieldList,
    /// `depends_on(..)`: a correction of one of these clears what the step collects.
    pub depends_on: FieldList,
    /// `tools(..)` and the key span.
    pub tools: Option<(Span, Vec<syn::Expr>)>,
    /// `requires_tool(..)`: tools that must have run before the flow ends here.
    pub requires_tool: Vec<syn::Expr>,
    /// `act_on_answer` (deprecated): the step's tools wait for the user's yes to a summary.
    pub act_on_answer: Option<Span>,
    /// `ask = ".."`: the code-written question of a model step.
    pub ask: Option<syn::LitStr>,
    /// `end`.
    pub end: bool,
    /// `interrupted = resume | restart | end`: over the flow's policy, at this step.
    pub interrupted: Option<syn::Ident>,
    /// `skip = |view| ..`.
    pub skip: Option<syn::Expr>,
    /// `if = |view| ..`: as a successor candidate, only when it holds.
    pub if_: Option<syn::Expr>,
    /// `when = ".."`: as a successor candidate, only when the model judges it true.
    pub when: Option<syn::LitStr>,
    /// `on_enter = hook`.
    pub on_enter: Option<HookRef>,
    /// `finalize = hook`.
    pub finalize: Option<HookRef>,
    /// `branches(..)`.
    pub branches: Option<Branches>,
    /// `jump_target`: reached by directives from elsewhere (not by this flow's graph).
    pub jump_target: bool,
    /// The fn body is the `prepare` hook (it returns something).
    pub prepare: bool,
    /// The predicates of the fn's `#[cfg(..)]` attributes (all must hold for the step to
    /// exist). Carried onto everything generated for the step.
    pub cfg: Vec<proc_macro2::TokenStream>,
}

impl StepDef {
    /// Whether the step is `auto`.
    pub fn is_auto(&self) -> bool {
        matches!(self.shape, Shape::Auto(_))
    }
    /// `#[cfg(..)]` attributes for the step's generated items (none for a plain step).
    pub fn cfg_attrs(&self) -> proc_macro2::TokenStream {
        let c = &self.cfg;
        quote::quote!(#(#[cfg(#c)])*)
    }
    /// Whether `other`, of the same name, is an alternative definition of this step
    /// under another `#[cfg]` (both gated) rather than a duplicate.
    pub fn cfg_alternative(&self, other: &StepDef) -> bool {
        !self.cfg.is_empty() && !other.cfg.is_empty()
    }
    /// Whether the step is a successor candidate only under a condition.
    pub fn is_conditional(&self) -> bool {
        self.if_.is_some() || self.when.is_some()
    }
}

/// The `#[flow(..)]` arguments.
#[derive(Default)]
pub struct FlowAttrs {
    /// `title = ".."`.
    pub title: Option<syn::LitStr>,
    /// `description = ".."`.
    pub description: Option<syn::LitStr>,
    /// `when = ".."`: routing condition.
    pub when: Option<syn::LitStr>,
    /// `if = |view| ..`: eligibility.
    pub if_: Option<syn::Expr>,
    /// `data = Type`.
    pub data: Option<syn::Path>,
    /// `context = Type`.
    pub context: Option<syn::Type>,
    /// `required(..)`.
    pub required: FieldList,
    /// `optional(..)`.
    pub optional: FieldList,
    /// `on_complete = FlowType | directive`.
    pub on_complete: Option<Target>,
    /// `on_enter = hook`.
    pub on_enter: Option<HookRef>,
    /// `on_exit = hook`.
    pub on_exit: Option<HookRef>,
    /// `on_data_update = hook`.
    pub on_data_update: Option<HookRef>,
    /// `on_context_update = hook`.
    pub on_context_update: Option<HookRef>,
    /// `on_complete_hook = hook`.
    pub on_complete_hook: Option<HookRef>,
    /// `reentrant`.
    pub reentrant: bool,
    /// `corrections = refuse | reopen`: what a correction does after completion.
    pub corrections: Option<syn::Ident>,
    /// `interrupted = resume | restart | end`: what another flow started while it is
    /// under way does to it.
    pub interrupted: Option<syn::Ident>,
    /// `cancel_clears(..)`: fields a cancel clears beside those the flow owns.
    pub cancel_clears: FieldList,
    /// `cancel_after_tool = ".."`: what a cancel says once a once-tool of the flow ran.
    pub cancel_after_tool: Option<syn::LitStr>,
    /// `tools(..)`: offered in every step.
    pub tools: Vec<syn::Expr>,
    /// `initial_data = patch`.
    pub initial_data: Option<syn::Expr>,
}

/// A parsed flow module.
pub struct FlowDef {
    /// The module name: the flow id.
    pub ident: syn::Ident,
    /// The module's visibility.
    pub vis: syn::Visibility,
    /// The module's attributes (doc comments...).
    pub attrs: Vec<syn::Attribute>,
    /// The flow attribute.
    pub flow: FlowAttrs,
    /// The steps in declaration order.
    pub steps: Vec<StepDef>,
    /// Every item of the module (step fns without their `#[step]`), in order.
    pub items: Vec<syn::Item>,
    /// Step names mentioned as `Step::name` in the module's code (directive targets).
    pub mentioned: Vec<String>,
}
