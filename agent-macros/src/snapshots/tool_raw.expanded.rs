#[doc = concat!("Move ", "the order.")]
#[allow(non_camel_case_types)]
#[derive(
    ::core::fmt::Debug,
    ::core::clone::Clone,
    ::core::marker::Copy,
    ::core::default::Default
)]
struct r#move;
const _: () = {
    const __AGENT_ARG_0: ::agent_core::__private::ToolArgSpec<String> = <String as ::agent_core::__private::ToolArg>::SPEC;
    #[allow(clippy::too_many_arguments, clippy::unused_async)]
    async fn r#move(r#type: String) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(r#type))
    }
    impl r#move {
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
    impl<
        __D: ::core::marker::Send + ::core::marker::Sync + 'static,
        __C: ::core::marker::Send + ::core::marker::Sync + 'static,
    > ::agent_core::__private::Tool<__D, __C> for r#move {
        fn name(&self) -> &str {
            "move"
        }
        fn description(&self) -> &str {
            ::core::concat!(concat!("Move ", "the order."))
        }
        fn parameters(&self) -> ::agent_core::__private::serde_json::Value {
            static SCHEMA: ::std::sync::OnceLock<
                ::agent_core::__private::serde_json::Value,
            > = ::std::sync::OnceLock::new();
            SCHEMA
                .get_or_init(|| {
                    ::agent_core::__private::ToolSchema::default()
                        .pipe(|s| __AGENT_ARG_0.describe(s, "type", "Where to", true))
                        .finish()
                })
                .clone()
        }
        fn concurrency_safe(&self) -> bool {
            false
        }
        async fn call(
            &self,
            _cx: ::agent_core::__private::ToolCx<__D, __C>,
            __args: ::agent_core::__private::serde_json::Value,
        ) -> ::core::result::Result<
            ::agent_core::__private::RtToolOutput,
            ::agent_core::__private::ToolError,
        > {
            #[allow(unused_variables)]
            let __obj = ::agent_core::__private::tool_args_object(__args)?;
            let r#type: String = __AGENT_ARG_0.decode(&__obj, "type", true)?;
            let __result = r#move(r#type).await;
            ::agent_core::__private::IntoToolResult::into_tool_result(__result)
        }
    }
};
