package dev.idempotency.spring.boot.web;

import dev.idempotency.core.IdempotentExecutor;
import dev.idempotency.core.outbox.OutboxWriter;
import dev.idempotency.core.tracing.Tracing;
import dev.idempotency.http.IdempotentHttp;
import dev.idempotency.http.IdempotentHttpConfig;
import dev.idempotency.jdbc.PostgresTransaction;
import dev.idempotency.spring.boot.IdempotencyAutoConfiguration;
import dev.idempotency.spring.boot.IdempotencyProperties;
import jakarta.servlet.Filter;
import jakarta.servlet.http.HttpServletRequest;
import java.util.function.Predicate;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.core.Ordered;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.util.ClassUtils;

/**
 * The HTTP side in a Servlet application: the {@code Idempotency-Key} rules ({@link IdempotentHttp})
 * from {@code idempotency.http.*}, the filter that applies them in a Spring transaction, and the
 * {@link IdempotentRequest} / {@link OutboxWriter} beans controllers publish events through.
 */
@AutoConfiguration(after = IdempotencyAutoConfiguration.class, afterName = {
        // Spring Boot 4.x
        "org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration",
        "org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration",
        "org.springframework.boot.hibernate.autoconfigure.HibernateJpaAutoConfiguration",
        // Spring Boot 3.5
        "org.springframework.boot.autoconfigure.transaction.TransactionAutoConfiguration",
        "org.springframework.boot.autoconfigure.jdbc.DataSourceTransactionManagerAutoConfiguration",
        "org.springframework.boot.autoconfigure.orm.jpa.HibernateJpaAutoConfiguration"})
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnClass({Filter.class, IdempotentHttp.class, TransactionTemplate.class})
@ConditionalOnBean({IdempotentExecutor.class, PlatformTransactionManager.class})
@ConditionalOnProperty(prefix = "idempotency.http", name = "enabled", havingValue = "true", matchIfMissing = true)
public class IdempotencyWebAutoConfiguration {

    /**
     * The rules' settings from {@code idempotency.http.*}, then each {@link IdempotentHttpConfigCustomizer}
     * in order; an application bean of this type replaces them.
     */
    @Bean
    @ConditionalOnMissingBean
    IdempotentHttpConfig idempotentHttpConfig(IdempotencyProperties properties,
                                              ObjectProvider<IdempotentHttpConfigCustomizer> customizers) {
        IdempotencyProperties.Http http = properties.http();
        IdempotentHttpConfig.Builder config = IdempotentHttpConfig.builder()
                .methods(http.methods().toArray(String[]::new))
                .pathPrefixes(http.paths().toArray(String[]::new))
                .replayedHeaders(http.replayedHeaders().toArray(String[]::new))
                .maxStoredBodyBytes(http.maxResponseBytes())
                .storedClientErrors(http.storedClientErrors().toArray(Integer[]::new))
                .retryAfter(http.retryAfter())
                .keySyntax(http.keySyntax());
        customizers.orderedStream().forEach(customizer -> customizer.customize(config));
        return config.build();
    }

    @Bean
    @ConditionalOnMissingBean
    IdempotentHttp<PostgresTransaction> idempotentHttp(IdempotentExecutor<PostgresTransaction> executor,
                                                       IdempotentHttpConfig config, Tracing tracing) {
        return IdempotentHttp.builder(executor).config(config).tracing(tracing).build();
    }

    /** The current request's idempotent call: its key, tenant and outbox. */
    @Bean
    @ConditionalOnMissingBean
    IdempotentRequest idempotentRequest() {
        return new IdempotentRequest();
    }

    @Bean
    FilterRegistrationBean<IdempotencyFilter> idempotencyFilter(IdempotentHttp<PostgresTransaction> http,
                                                                PlatformTransactionManager transactionManager,
                                                                IdempotencyProperties properties,
                                                                BeanFactory beans,
                                                                ObjectProvider<IdempotencyFilter.TenantResolver> tenants) {
        Predicate<HttpServletRequest> annotated = ClassUtils.isPresent(
                "org.springframework.web.servlet.mvc.method.annotation.RequestMappingHandlerMapping",
                getClass().getClassLoader()) ? new AnnotatedEndpoints(beans) : request -> false;
        String tenantHeader = properties.http().tenantHeader();
        IdempotencyFilter.TenantResolver tenant = tenants.getIfAvailable(() -> tenantHeader.isEmpty()
                ? IdempotencyFilter.TenantResolver.principalOrDefault()
                : request -> {
                    String value = request.getHeader(tenantHeader);
                    return value == null || value.isBlank() ? "default" : value;
                });
        IdempotencyFilter filter = new IdempotencyFilter(http, new TransactionTemplate(transactionManager), annotated,
                tenant, properties.http().maxRequestBytes());
        FilterRegistrationBean<IdempotencyFilter> registration = new FilterRegistrationBean<>(filter);
        registration.setName("idempotencyFilter");
        // After security (which sets the principal, the tenant) and Spring's request filters.
        registration.setOrder(Ordered.LOWEST_PRECEDENCE - 100);
        return registration;
    }
}
