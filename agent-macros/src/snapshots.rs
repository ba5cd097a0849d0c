//! Expansion snapshots (expect-test + prettyplease): what each macro generates for a
//! typical input, and that an input with errors still expands to the item plus every
//! error. Refresh with `UPDATE_EXPECT=1 cargo test -p agent-macros`.

use expect_test::expect_file;
use proc_macro2::TokenStream;
use quote::quote;

fn pretty(ts: TokenStream) -> String {
    match syn::parse2::<syn::File>(ts.clone()) {
        Ok(f) => prettyplease::unparse(&f),
        Err(e) => format!("// not a file ({e}):\n{ts}\n"),
    }
}

#[test]
fn data_expands_to_optional_fields_field_enum_patch_view_and_callback() {
    let out = crate::data::expand(
        crate::data::Kind::Data,
        quote!(),
        quote! {
            /// What the concierge collects.
            #[derive(PartialEq)]
            pub struct Booking {
                /// City the guest wants to stay in
                pub city: String,
                /// Number of guests
                pub guests: u8,
                pub notes: Option<String>,
            }
        },
    );
    expect_file!["snapshots/data.expanded.rs"].assert_eq(&pretty(out));
}

#[test]
fn data_field_constraints_become_schemars_attributes_and_are_stripped() {
    let out = crate::data::expand(
        crate::data::Kind::Data,
        quote!(),
        quote! {
            pub struct Stay {
                /// Number of guests
                #[field(range = 1..=12, synonyms(1 = ["just me", "alone"], 2 = "my wife and I"))]
                pub guests: u8,
                #[field(range = -10.5..=)]
                pub min_temp: Option<f64>,
                #[field(range = ..=5000)]
                pub budget: i64,
                /// Check-in date (ISO 8601)
                #[field(pattern = "^\\d{4}-\\d{2}-\\d{2}$", len = 10..=10)]
                pub check_in: String,
                #[field(one_of("standard", "suite"), inferred, synonyms("suite" = ["the big one"]))]
                #[serde(default)]
                pub room: String,
                #[field(len = ..=3)]
                pub tags: Vec<String>,
                #[field(len = 1..=80, validate = crate::checks::served_city)]
                pub city: String,
                #[field(not_past)]
                pub arrival: Date,
            }
        },
    );
    expect_file!["snapshots/data_fields.expanded.rs"].assert_eq(&pretty(out));
}

#[test]
fn data_field_errors_are_all_reported_and_the_struct_still_expands() {
    let out = crate::data::expand(
        crate::data::Kind::Data,
        quote!(),
        quote! {
            pub struct Stay {
                #[field(rnage = 1..=12, range = 12..=1)]
                pub guests: u8,
                #[field(range = 1..=12, pattern = "(")]
                pub city: String,
                #[field(range = 1..12, len = 1.5..=, one_of(1, 2), inferred = true)]
                pub notes: String,
                #[field(range = -1..=300, one_of("a"), pattern = "x")]
                pub nights: u8,
                #[field]
                pub pets: bool,
                #[field(inferred, inferred)]
                pub source: String,
                #[field(validate, validate = 3)]
                pub hotel: String,
            }
        },
    );
    expect_file!["snapshots/data_field_errors.expanded.rs"].assert_eq(&pretty(out));
}

#[test]
fn field_constraints_on_a_context_are_an_error() {
    let out = crate::data::expand(
        crate::data::Kind::Context,
        quote!(),
        quote! {
            pub struct Concierge {
                #[field(range = 1..=3)]
                pub tier: u8,
            }
        },
    )
    .to_string();
    assert!(out.contains("`#[field(...)]` constraints are only for `#[data]` fields"));
    assert!(!out.contains("schemars"), "{out}");
    assert!(!out.contains("# [field"), "{out}");
}

#[test]
fn context_expands_to_field_enum_and_patch() {
    let out = crate::data::expand(
        crate::data::Kind::Context,
        quote!(),
        quote! {
            pub struct Concierge {
                /// Loyalty tier
                pub tier: String,
            }
        },
    );
    expect_file!["snapshots/context.expanded.rs"].assert_eq(&pretty(out));
}

#[test]
fn tool_expands_to_a_unit_struct_implementing_tool() {
    let out = crate::tool::expand(
        quote!(approval = rules::large_group),
        quote! {
            /// Book the room.
            async fn book_room(
                cx: ToolCx<Booking, Concierge>,
                /// Hotel name
                hotel: String,
                /// Special requests
                notes: Option<String>,
                /// The search words the model chose
                #[arg(derived)]
                query: Option<String>,
            ) -> Result<ToolOutput, ToolError> {
                Ok(ToolOutput::text(hotel))
            }
        },
    );
    expect_file!["snapshots/tool.expanded.rs"].assert_eq(&pretty(out));
}

#[test]
fn tool_without_context_is_generic_over_the_agent() {
    let out = crate::tool::expand(
        quote!(
            name = "clock",
            concurrency_safe,
            timeout_ms = 1500,
            effect = once,
            request_words = ["time", "hora"],
            outcome = ["told the time"],
            approval
        ),
        quote! {
            /// The time.
            fn now() -> Result<ToolOutput, ToolError> {
                Ok(ToolOutput::text("12:00"))
            }
        },
    );
    expect_file!["snapshots/tool_generic.expanded.rs"].assert_eq(&pretty(out));
}

#[test]
fn a_tool_outcome_that_is_not_a_list_of_words_is_one_error_naming_the_form() {
    for attr in [
        quote!(outcome = "booked"),
        quote!(outcome = ["booked", 3]),
        quote!(outcome = [""]),
    ] {
        let out = crate::tool::expand(
            attr,
            quote! {
                /// Book.
                fn book() -> Result<ToolOutput, ToolError> {
                    Ok(ToolOutput::text("ok"))
                }
            },
        )
        .to_string();
        assert!(
            out.contains("`outcome` takes a list of string literals"),
            "{out}"
        );
        assert_eq!(out.matches("compile_error").count(), 1, "{out}");
    }
}

#[test]
fn flow_expands_to_flow_type_steps_views_hooks_and_builder() {
    let out = crate::flow::expand(
        quote!(
            title = "Hotel booking",
            data = Booking,
            context = Concierge,
            required(city, guests),
            on_complete = FeedbackFlow,
            corrections = reopen,
            interrupted = restart,
            cancel_clears(hotel)
        ),
        quote! {
            mod booking {
                #[step(prompt = "Ask the city.", collect(city))]
                fn ask_city() {}

                #[step(prompt = "Ask the hotel.", collect(hotel), depends_on(city), interrupted = end)]
                fn ask_hotel() {}

                #[step(auto, requires(guests), branches(
                    if |b| b.guests > 8 => large_group,
                    else => confirm,
                ))]
                fn route() {}

                #[step(end, prompt = "Confirm.", requires(guests), ask = "Book {guests} guests?", tools(book_room), act_on_answer, finalize = done, branches(
                    when "the user asks about pets" => PetsFlow,
                    when "the user wants to leave feedback" => feedback::Step::ask,
                    when "the user gives up" => Directive::abort("gave up"),
                ))]
                async fn confirm(v: confirm::View<'_>) -> PreDirective<Booking, Concierge> {
                    PreDirective::new().append_prompt(v.context().tier.clone())
                }

                fn done(_v: confirm::View<'_>) -> impl IntoDirective<Booking> {
                    Directive::complete()
                }

                #[step(end, reply = "A specialist will call you.")]
                fn large_group() {}
            }
        },
    );
    expect_file!["snapshots/flow.expanded.rs"].assert_eq(&pretty(out));
}

#[test]
fn flow_with_errors_reports_them_all_and_still_expands() {
    let out = crate::flow::expand(
        quote!(data = Booking),
        quote! {
            mod booking {
                #[step(auto, prompt = "Route.", branches(
                    else => confrim,
                    when "never" => confirm,
                ))]
                fn route() {}

                #[step(end, prompt = "Confirm.", branches())]
                fn confirm() {}
            }
        },
    );
    expect_file!["snapshots/flow_errors.expanded.rs"].assert_eq(&pretty(out));
}

#[test]
fn data_callback_implements_step_views_and_checks_fields() {
    let out = crate::data::callback::expand(quote! {
        [city guests] [cache]
        data_name = "Booking";
        data = Booking;
        context = Concierge;
        prefix = __agent_flow_booking;
        vis = ();
        views { route [guests] #[cfg(feature = "x")] extra [] __flow [] }
        checks { collect [city cache] requires [gusts] template [cty] }
        absent { done [guests] #[cfg(feature = "x")] extra [city] greet [cty] }
    });
    expect_file!["snapshots/callback.expanded.rs"].assert_eq(&pretty(out));
}

#[test]
fn step_outside_a_flow_is_an_error_that_keeps_the_fn() {
    let out = crate::flow::stray_step(quote! {
        fn ask_city() {}
    });
    expect_file!["snapshots/stray_step.expanded.rs"].assert_eq(&pretty(out));
}

#[test]
fn flow_on_an_async_fn_expands_to_a_code_flow_type() {
    let out = crate::flow_entry(
        quote!(
            title = "English tutor",
            when = "the user wants to practise English"
        ),
        quote! {
            pub async fn tutor(ctx: FlowCx<Notes, ()>) -> FlowResult {
                let name: String = ctx.ask("name", "What's your name?").await;
                ctx.say(format!("Nice to meet you, {name}.")).await;
                ctx.handoff::<ReminderFlow>()
            }
        },
    );
    expect_file!["snapshots/code_flow.expanded.rs"].assert_eq(&pretty(out));
}

#[test]
fn flow_with_raw_identifiers_and_cfg_steps_uses_unraw_ids_and_gates_the_step() {
    let out = crate::flow::expand(
        quote!(
            data = Order,
            required(r#type),
            cancel_after_tool = "The order stays placed."
        ),
        quote! {
            mod r#match {
                #[step(prompt = "Ask the kind.", collect(r#type), branches(
                    when "the user wants a loop" => Step::r#loop,
                ))]
                fn ask() {}

                #[cfg(feature = "loops")]
                #[step(prompt = "Ask the rounds.", collect(r#loop), on_enter = greet)]
                fn r#loop() {}

                #[step(end, reply = "Done: {type}.")]
                fn done() {}

                fn greet(_v: r#loop::View<'_>) -> Directive {
                    Directive::new()
                }
            }
        },
    );
    expect_file!["snapshots/flow_raw_cfg.expanded.rs"].assert_eq(&pretty(out));
}

#[test]
fn data_json_names_follow_serde() {
    let out = crate::data::expand(
        crate::data::Kind::Data,
        quote!(),
        quote! {
            #[serde(rename_all = "camelCase")]
            pub struct Stay {
                /// Check-in date
                pub check_in: String,
                #[serde(rename = "n_guests", alias = "guestCount")]
                pub guests: u8,
                pub r#type: String,
                #[serde(skip)]
                pub cache: String,
            }
        },
    );
    expect_file!["snapshots/data_serde.expanded.rs"].assert_eq(&pretty(out));
}

#[test]
fn tool_with_a_raw_name_and_a_computed_doc() {
    let out = crate::tool::expand(
        quote!(),
        quote! {
            #[doc = concat!("Move ", "the order.")]
            async fn r#move(
                /// Where to
                r#type: String,
            ) -> Result<ToolOutput, ToolError> {
                Ok(ToolOutput::text(r#type))
            }
        },
    );
    expect_file!["snapshots/tool_raw.expanded.rs"].assert_eq(&pretty(out));
}
