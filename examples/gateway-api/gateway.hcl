# The join: which Gateways are this controller's, which routes attach to
# which of their listeners, what each backendRef resolves to, and from that
# the statuses and HAProxy's routing. Lookup tables are built once in let,
# so an evaluation is linear in the number of records.
transform "aggregate" "gateway" {
  inputs = [
    transform.extract.classes, transform.extract.gateways, transform.extract.routes,
    transform.extract.services, transform.grace_period.drain, transform.extract.grants,
  ]
  let = {
    classes  = { for r in records : r.value.name => r.value if r.value.kind == "class" }
    gateways = { for r in records : "${r.value.namespace}/${r.value.name}" => r.value if r.value.kind == "gateway" && can(let.classes[r.value.class]) }
    routes   = [for r in records : r.value if r.value.kind == "route"]
    services = { for r in records : "${r.value.namespace}/${r.value.name}" => r.value if r.value.kind == "service" }
    # namespace/service/port name => ready endpoints
    endpoints = { for r in records : "${r.value.namespace}/${r.value.service}/${r.value.port_name}" => r.value... if r.value.kind == "endpoint" }
    # "FROM/TO/NAME" (NAME empty: every Service of TO) => the grants
    grants = { for r in records : r.value.permits => true... if r.value.kind == "grant" }

    # One attachment per parentRef naming a Gateway of this controller;
    # parentRefs naming other Gateways are not this controller's business.
    attach0 = flatten([for rt in let.routes : [for p in rt.parents : {
      route  = rt
      key    = "${rt.namespace}/${rt.name}"
      parent = p
      gw     = let.gateways[p.gateway]
      matching = [for l in let.gateways[p.gateway].listeners : l
      if contains(["", l.name], p.section) && contains([0, l.port], p.port)]
    } if p.is_gateway && can(let.gateways[p.gateway])]])
    attach1 = [for a in let.attach0 : merge(a, {
      allowed = [for l in a.matching : l.name
      if l.protocol == "HTTP" && (l.from == "All" || (l.from == "Same" && a.route.namespace == a.gw.namespace))]
    })]
    # Each attachment's Accepted condition, with the spec's reasons.
    attach = [for a in let.attach1 : merge(a, { accepted = (
      length(a.allowed) > 0 ? { ok = true, reason = "Accepted", message = "Accepted by listener ${join(", ", a.allowed)} of Gateway ${a.parent.gateway}." }
      : length(a.matching) > 0 ? { ok = false, reason = "NotAllowedByListeners", message = "No listener of Gateway ${a.parent.gateway} that the parentRef selects allows this route (allowedRoutes, protocol)." }
      : { ok = false, reason = "NoMatchingParent", message = "Gateway ${a.parent.gateway} has no listener with this sectionName and port." }
    ) })]
    attach_by_route = { for a in let.attach : a.key => a... }
    # "gateway/listener" => the routes accepted there
    attached = { for x in distinct(flatten([for a in let.attach : [for l in a.allowed : { at = "${a.gw.namespace}/${a.gw.name}/${l}", route = a.key }]])) : x.at => x.route... }
    # Routes accepted by at least one listener: these are served.
    served = { for a in let.attach : a.key => a.route... if length(a.allowed) > 0 }

    # Every backendRef, resolved: why it cannot be used ("" when it can).
    refs = flatten([for rt in let.routes : [for ri, rule in rt.rules : [for b in rule.backends : merge(b, {
      route     = "${rt.namespace}/${rt.name}"
      backend   = "${rt.namespace}_${rt.name}_${ri}"
      port_name = try([for sp in let.services["${b.namespace}/${b.name}"].ports : sp.name if sp.port == b.port][0], null)
      reason = (b.group != "" || b.kind != "Service" ? "InvalidKind"
        : b.namespace != rt.namespace && !can(let.grants["${rt.namespace}/${b.namespace}/${b.name}"]) && !can(let.grants["${rt.namespace}/${b.namespace}/"]) ? "RefNotPermitted"
        : !can(let.services["${b.namespace}/${b.name}"]) ? "BackendNotFound"
      : length([for sp in let.services["${b.namespace}/${b.name}"].ports : sp if sp.port == b.port]) == 0 ? "BackendNotFound" : "")
    })]]])
    # Each route's ResolvedRefs condition: the first backendRef that does
    # not resolve gives the reason, the message lists them all.
    unresolved = { for b in let.refs : b.route => b... if b.reason != "" }
    resolved = { for rt in let.routes : "${rt.namespace}/${rt.name}" => (
      can(let.unresolved["${rt.namespace}/${rt.name}"])
      ? { ok = false, reason = let.unresolved["${rt.namespace}/${rt.name}"][0].reason,
      message = join(" ", [for b in let.unresolved["${rt.namespace}/${rt.name}"] : "${b.reason}: ${b.kind} ${b.namespace}/${b.name} port ${b.port}."]) }
      : { ok = true, reason = "ResolvedRefs", message = "Every backendRef resolves." }
    ) }
    # Usable refs with their endpoints, per HAProxy backend (one per rule).
    usable = { for b in let.refs : b.backend => merge(b, { endpoints = try(let.endpoints["${b.namespace}/${b.name}/${b.port_name}"], []) })... if b.reason == "" && b.weight > 0 }
  }

  for_each = concat(
    # GatewayClass: Accepted.
    [for c in let.classes : {
      key = "class/${c.name}"
      value = { kind = "class_status", name = c.name, conditions = [{
        type               = "Accepted"
        status             = "True"
        reason             = "Accepted"
        message            = "Served by pipeline (examples/gateway-api)."
        observedGeneration = c.generation
        lastTransitionTime = try([for x in c.conditions : x.lastTransitionTime if x.type == "Accepted" && x.status == "True"][0], c.changed)
      }] }
    }],
    # Gateway: Accepted and Programmed; per listener, its conditions and
    # attachedRoutes.
    [for g in let.gateways : {
      key = "gateway/${g.namespace}/${g.name}"
      value = {
        kind      = "gateway_status"
        namespace = g.namespace
        name      = g.name
        conditions = [for t in ["Accepted", "Programmed"] : {
          type               = t
          status             = "True"
          reason             = t
          message            = t == "Accepted" ? "Accepted by ${var.controller_name}." : "Served by HAProxy at ${var.listen}."
          observedGeneration = g.generation
          lastTransitionTime = try([for x in g.conditions : x.lastTransitionTime if x.type == t && x.status == "True"][0], g.changed)
        }]
        listeners = [for l in g.listeners : {
          name           = l.name
          supportedKinds = l.protocol == "HTTP" ? [{ group = local.group, kind = "HTTPRoute" }] : []
          attachedRoutes = length(try(let.attached["${g.namespace}/${g.name}/${l.name}"], []))
          conditions = [for c in [
            { type = "Accepted", ok = l.protocol == "HTTP", reason = l.protocol == "HTTP" ? "Accepted" : "UnsupportedProtocol" },
            { type = "Programmed", ok = l.protocol == "HTTP", reason = l.protocol == "HTTP" ? "Programmed" : "Invalid" },
            { type = "ResolvedRefs", ok = true, reason = "ResolvedRefs" },
            ] : {
            type               = c.type
            status             = c.ok ? "True" : "False"
            reason             = c.reason
            message            = c.ok ? "Listener ${l.name}: ${c.reason}." : "Listener ${l.name}: protocol ${l.protocol} is not supported; only HTTP is."
            observedGeneration = g.generation
            lastTransitionTime = try([for x in l.conditions : x.lastTransitionTime if x.type == c.type && x.status == (c.ok ? "True" : "False")][0], g.changed)
          }]
        }]
      }
    }],
    # HTTPRoute: one entry per parentRef naming a Gateway of this
    # controller, after the other controllers' entries.
    [for rt in let.routes : {
      key = "route/${rt.namespace}/${rt.name}"
      value = {
        kind      = "route_status"
        namespace = rt.namespace
        name      = rt.name
        parents = concat(rt.others, [for a in try(let.attach_by_route["${rt.namespace}/${rt.name}"], []) : {
          parentRef      = a.parent.ref
          controllerName = var.controller_name
          conditions = [for c in [merge(a.accepted, { type = "Accepted" }), merge(let.resolved[a.key], { type = "ResolvedRefs" })] : {
            type               = c.type
            status             = c.ok ? "True" : "False"
            reason             = c.reason
            message            = c.message
            observedGeneration = rt.generation
            lastTransitionTime = try([for x in rt.ours[a.parent.id][0] : x.lastTransitionTime if x.type == c.type && x.status == (c.ok ? "True" : "False")][0], rt.changed)
          }]
        }])
      }
    } if can(let.attach_by_route["${rt.namespace}/${rt.name}"]) || rt.managed],
    # HAProxy: one match per rule, match and hostname, keyed so that the
    # sorted keys are the spec's precedence (hostnames before none, Exact
    # paths before prefixes, longer prefixes first, more headers first).
    flatten([for k, g in let.served : [for ri, rule in g[0].rules : [for mi, m in rule.matches : [
      for hi, h in g[0].hosts : {
        key = join("/", ["match", h == "" ? "2" : substr(h, 0, 2) == "*." ? "1" : "0", h, m.path_type == "Exact" ? "0" : "1",
        format("%04d", 9999 - length(m.path)), format("%02d", 99 - length(m.headers)), g[0].namespace, g[0].name, format("%03d/%03d/%03d", ri, mi, hi)])
        value = {
          kind    = "match"
          backend = "${g[0].namespace}_${g[0].name}_${ri}"
          acls = m.path_type == "PathPrefix" && m.path != "/" ? [
            "acl p_${g[0].namespace}_${g[0].name}_${ri}_${mi}_${hi} path ${replace(m.path, "//$/", "")}",
            "acl p_${g[0].namespace}_${g[0].name}_${ri}_${mi}_${hi} path_beg ${replace(m.path, "//$/", "")}/",
          ] : []
          cond = join(" ", concat(
            h == "" ? [] : substr(h, 0, 2) == "*." ? ["{ req.hdr(host),field(1,:) -m end -i ${substr(h, 1, -1)} }"] : ["{ req.hdr(host),field(1,:) -i ${h} }"],
            m.path_type == "Exact" ? ["{ path ${m.path} }"] : m.path == "/" ? ["{ path_beg / }"] : ["p_${g[0].namespace}_${g[0].name}_${ri}_${mi}_${hi}"],
            [for hd in m.headers : hd.type == "RegularExpression" ? "{ req.hdr(${hd.name}) -m reg ${hd.value} }" : "{ req.hdr(${hd.name}) -m str ${hd.value} }"],
          ))
        }
      }
    ]]]]),
    # One HAProxy backend per rule of a served route: without a usable
    # backendRef, it answers 500 as the spec says.
    flatten([for k, g in let.served : [for ri, rule in g[0].rules : {
      key   = "backend/${g[0].namespace}_${g[0].name}_${ri}"
      value = { kind = "backend", backend = "${g[0].namespace}_${g[0].name}_${ri}", fail = !can(let.usable["${g[0].namespace}_${g[0].name}_${ri}"]) }
    }]]),
    # Its servers: each ready endpoint of each usable backendRef, weighted
    # so that each backendRef gets its weight's share of the requests
    # (HAProxy weights are 1 to 256, relative within a backend).
    flatten([for be, refs in let.usable : [for b in refs : [for ep in b.endpoints : {
      key = "server/${be}/${b.namespace}/${b.name}/${ep.address}:${ep.port}"
      value = {
        kind    = "server"
        backend = be
        name    = "${b.name}_${ep.name}:${ep.port}"
        address = ep.address
        port    = ep.port
        weight  = format("%.0f", max(1, 256 * (b.weight / length(b.endpoints)) / max([for o in refs : o.weight / length(o.endpoints) if length(o.endpoints) > 0]...)))
      }
    }]] if can(let.served[refs[0].route])]),
  )
  key   = each.value.key
  value = each.value.value
}
