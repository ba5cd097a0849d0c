/// The time.
#[allow(non_camel_case_types)]
#[derive(
    ::core::fmt::Debug,
    ::core::clone::Clone,
    ::core::marker::Copy,
    ::core::default::Default
)]
struct now;
const _: () = {
    #[allow(clippy::too_many_arguments, clippy::unused_async)]
    fn now() -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("12:00"))
    }
    impl now {
        /// Whether the tool is a once-tool, as `#[flow]` reads it at compile time.
        #[doc(hidden)]
        #[allow(dead_code)]
        pub const __AGENT_ONCE: bool = true;
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
    > ::agent_core::__private::Tool<__D, __C> for now {
        fn name(&self) -> &str {
            "clock"
        }
        fn description(&self) -> &str {
            "The time."
        }
        fn parameters(&self) -> ::agent_core::__private::serde_json::Value {
            static SCHEMA: ::std::sync::OnceLock<
                ::agent_core::__private::serde_json::Value,
            > = ::std::sync::OnceLock::new();
            SCHEMA
                .get_or_init(|| {
                    ::agent_core::__private::ToolSchema::default().finish()
                })
                .clone()
        }
        fn concurrency_safe(&self) -> bool {
            true
        }
        fn timeout(&self) -> ::core::option::Option<::core::time::Duration> {
            ::core::option::Option::Some(::core::time::Duration::from_millis(1500u64))
        }
        fn effect(&self) -> ::agent_core::__private::Effect {
            ::agent_core::__private::Effect::Once
        }
        fn request_words(&self) -> ::std::vec::Vec<::std::string::String> {
            ::std::vec![
                ::std::string::String::from("time"), ::std::string::String::from("hora")
            ]
        }
        fn outcome_words(&self) -> ::std::vec::Vec<::std::string::String> {
            ::std::vec![::std::string::String::from("told the time")]
        }
        fn needs_approval(
            &self,
            _args: &::agent_core::__private::serde_json::Value,
        ) -> bool {
            true
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
            let __result = now();
            ::agent_core::__private::IntoToolResult::into_tool_result(__result)
        }
    }
};
