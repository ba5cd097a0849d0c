//! The shape of a code flow fn: `async fn name(ctx: FlowCx<Data, Context>) -> FlowResult`.

use syn::{FnArg, GenericArgument, PathArguments, Type};

use super::parse::CodeFlowDef;
use crate::diag::Errors;

/// The `Data` and `Context` types of the fn's `FlowCx<Data, Context>` parameter, if
/// it is written that way.
pub fn cx_types(def: &CodeFlowDef) -> Option<(Type, Type)> {
    let FnArg::Typed(p) = def.item.sig.inputs.first()? else {
        return None;
    };
    let Type::Path(tp) = p.ty.as_ref() else {
        return None;
    };
    let seg = tp.path.segments.last()?;
    let PathArguments::AngleBracketed(args) = &seg.arguments else {
        return None;
    };
    let tys: Vec<Type> = args
        .args
        .iter()
        .filter_map(|a| match a {
            GenericArgument::Type(t) => Some(t.clone()),
            _ => None,
        })
        .collect();
    match tys.as_slice() {
        [d, c] => Some((d.clone(), c.clone())),
        _ => None,
    }
}

/// Check the fn; every problem is reported at the user's tokens.
pub fn validate(def: &CodeFlowDef, errors: &mut Errors) {
    let sig = &def.item.sig;
    if sig.asyncness.is_none() {
        errors.push_spanned(
            sig.fn_token,
            "a code flow is an `async fn`: write `async fn` (it awaits `ctx.ask(..)` and `ctx.tool(..)`)",
        );
    }
    if !sig.generics.params.is_empty() {
        errors.push_spanned(
            &sig.generics,
            "a code flow cannot be generic: its data and context types come from `FlowCx<Data, Context>`",
        );
    }
    if sig.inputs.len() != 1 || matches!(sig.inputs.first(), Some(FnArg::Receiver(_))) {
        errors.push_spanned(
            &sig.inputs,
            "a code flow takes exactly one parameter, its context: `ctx: FlowCx<Data, Context>`",
        );
    } else if cx_types(def).is_none() && (def.data.is_none() || def.context.is_none()) {
        errors.push_spanned(
            &sig.inputs,
            "write the parameter as `ctx: FlowCx<Data, Context>`, or name the types with `#[flow(data = .., context = ..)]`",
        );
    }
    if matches!(sig.output, syn::ReturnType::Default) {
        errors.push_spanned(
            &sig.ident,
            "a code flow returns `FlowResult`: end with `ctx.end(..)` or `ctx.handoff::<OtherFlow>()`",
        );
    }
    if def.id.is_empty() {
        errors.push_spanned(&sig.ident, "the flow id cannot be empty");
    }
}
