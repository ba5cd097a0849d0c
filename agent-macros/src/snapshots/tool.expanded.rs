/// Book the room.
#[allow(non_camel_case_types)]
#[derive(
    ::core::fmt::Debug,
    ::core::clone::Clone,
    ::core::marker::Copy,
    ::core::default::Default
)]
struct book_room;
const _: () = {
    const __AGENT_ARG_0: ::agent_core::__private::ToolArgSpec<String> = <String as ::agent_core::__private::ToolArg>::SPEC;
    const __AGENT_ARG_1: ::agent_core::__private::ToolArgSpec<Option<String>> = <Option<
        String,
    > as ::agent_core::__private::ToolArg>::SPEC;
    const __AGENT_ARG_2: ::agent_core::__private::ToolArgSpec<Option<String>> = <Option<
        String,
    > as ::agent_core::__private::ToolArg>::SPEC;
    #[allow(clippy::too_many_arguments, clippy::unused_async)]
    async fn book_room(
        cx: ToolCx<Booking, Concierge>,
        hotel: String,
        notes: Option<String>,
        query: Option<String>,
    ) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(hotel))
    }
    impl book_room {
        /// Whether the tool is a once-tool, as `#[flow]` reads it at compile time.
        #[doc(hidden)]
        #[allow(dead_code)]
        pub const __AGENT_ONCE: bool = false;
        /// Share the tool (`Arc<dyn Tool<D, C>>`), as the agent builder takes it.
        #[allow(dead_code)]
        pub fn arc<__D2: 'static, __C2: 'static>(
            self,
        ) -> ::std::sync::Arc<dyn ::agent_core::__private::Tool<__D2, __C2>>
        where
            Self: ::agent_core::__private::Tool<__D2, __C2>,
        {
            ::std::sync::Arc::new(self)
        }
    }
    #[::agent_core::__private::async_trait::async_trait]
    impl ::agent_core::__private::Tool<Booking, Concierge> for book_room {
        fn name(&self) -> &str {
            "book_room"
        }
        fn description(&self) -> &str {
            "Book the room."
        }
        fn parameters(&self) -> ::agent_core::__private::serde_json::Value {
            static SCHEMA: ::std::sync::OnceLock<
                ::agent_core::__private::serde_json::Value,
            > = ::std::sync::OnceLock::new();
            SCHEMA
                .get_or_init(|| {
                    ::agent_core::__private::ToolSchema::default()
                        .pipe(|s| __AGENT_ARG_0.describe(s, "hotel", "Hotel name", true))
                        .pipe(|s| {
                            __AGENT_ARG_1.describe(s, "notes", "Special requests", false)
                        })
                        .pipe(|s| {
                            __AGENT_ARG_2
                                .describe(
                                    s,
                                    "query",
                                    "The search words the model chose",
                                    false,
                                )
                        })
                        .finish()
                })
                .clone()
        }
        fn concurrency_safe(&self) -> bool {
            false
        }
        fn derived_args(&self) -> ::std::vec::Vec<::std::string::String> {
            ::std::vec![::std::string::String::from("query")]
        }
        fn needs_approval(
            &self,
            __args: &::agent_core::__private::serde_json::Value,
        ) -> bool {
            let __rule: fn(&::agent_core::__private::serde_json::Value) -> bool = rules::large_group;
            __rule(__args)
        }
        async fn call(
            &self,
            __cx: ::agent_core::__private::ToolCx<Booking, Concierge>,
            __args: ::agent_core::__private::serde_json::Value,
        ) -> ::core::result::Result<
            ::agent_core::__private::RtToolOutput,
            ::agent_core::__private::ToolError,
        > {
            #[allow(unused_variables)]
            let __obj = ::agent_core::__private::tool_args_object(__args)?;
            let hotel: String = __AGENT_ARG_0.decode(&__obj, "hotel", true)?;
            let notes: Option<String> = __AGENT_ARG_1.decode(&__obj, "notes", false)?;
            let query: Option<String> = __AGENT_ARG_2.decode(&__obj, "query", false)?;
            let __result = book_room(__cx, hotel, notes, query).await;
            ::agent_core::__private::IntoToolResult::into_tool_result(__result)
        }
    }
};
