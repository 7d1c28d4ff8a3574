"""Matchable attributes, FlyteAdmin's project, project-domain and workflow attributes: Update, Get and Delete at
each level, and ListMatchableAttributes (what `flytectl update/get/delete task-resource-attribute`,
`workflow-execution-config`, `plugin-override` ... send).

An update replaces the attributes of its resource type at its level, except plugin overrides, which merge by
task type, as FlyteAdmin's do. What applies to an execution is the most specific level's (store/attributes.py);
`launch_settings` gives what a launch takes from them.
"""

from __future__ import annotations

from flyteidl.admin import (
    matchable_resource_pb2,
    project_attributes_pb2,
    project_domain_attributes_pb2,
    workflow_attributes_pb2,
)

from flytelite.admin.entity_common import require_project, validate_domain
from flytelite.context import Context
from flytelite.errors import InvalidArgument, NotFound
from flytelite.idl.enums import enum_name
from flytelite.store import attributes as repo

M = matchable_resource_pb2


def _kind(attributes: M.MatchingAttributes) -> int:
    kind = repo.resource_type(attributes)
    if kind is None:
        raise InvalidArgument("matching_attributes sets no attribute; set one of "
                              f"{', '.join(repo.TARGETS)}")
    return kind


def _merged(kind: int, old: M.MatchingAttributes | None, new: M.MatchingAttributes) -> M.MatchingAttributes:
    """Plugin overrides merge with the stored ones by task type; every other kind replaces them."""
    if kind != M.PLUGIN_OVERRIDE or old is None:
        return new
    by_type = {o.task_type: o for o in old.plugin_overrides.overrides}
    by_type.update({o.task_type: o for o in new.plugin_overrides.overrides})
    return M.MatchingAttributes(plugin_overrides=M.PluginOverrides(overrides=list(by_type.values())))


def _need_domain(domain: str) -> None:
    if not domain:
        raise InvalidArgument("project-domain attributes need a domain")


def _check(session, project: str, domain: str) -> None:
    require_project(session, project)
    if domain:
        validate_domain(domain)


def _absent(kind: int, project: str, domain: str, workflow: str) -> NotFound:
    where = "/".join(p for p in (project, domain, workflow) if p)
    return NotFound(f"no {enum_name(M.MatchableResource, kind)} attributes are set for {where}")


class AttributesApi:
    ctx: Context

    # -- levels ---------------------------------------------------------------------------------
    def _update(self, attributes: M.MatchingAttributes, project: str, domain: str = "", workflow: str = "") -> None:
        kind = _kind(attributes)
        if kind == M.PLUGIN_OVERRIDE:
            for override in attributes.plugin_overrides.overrides:
                if not override.task_type:
                    raise InvalidArgument("a plugin override names no task_type")
        with self.ctx.db.session() as session:
            _check(session, project, domain)
            merged = _merged(kind, repo.get(session, kind, project, domain, workflow), attributes)
            repo.put(session, kind, merged, self.ctx.clock.now(), project, domain, workflow)

    def _get(self, kind: int, project: str, domain: str = "", workflow: str = "") -> M.MatchingAttributes:
        with self.ctx.db.session() as session:
            _check(session, project, domain)
            found = repo.get(session, kind, project, domain, workflow)
        if found is None:
            raise _absent(kind, project, domain, workflow)
        return found

    def _delete(self, kind: int, project: str, domain: str = "", workflow: str = "") -> None:
        with self.ctx.db.session() as session:
            _check(session, project, domain)
            if not repo.remove(session, kind, project, domain, workflow):
                raise _absent(kind, project, domain, workflow)

    # -- RPCs -----------------------------------------------------------------------------------
    def UpdateProjectAttributes(self, request: project_attributes_pb2.ProjectAttributesUpdateRequest, context=None):
        self._update(request.attributes.matching_attributes, request.attributes.project)
        return project_attributes_pb2.ProjectAttributesUpdateResponse()

    def GetProjectAttributes(self, request: project_attributes_pb2.ProjectAttributesGetRequest, context=None):
        if request.resource_type == M.WORKFLOW_EXECUTION_CONFIG:
            found = self._project_execution_config(request.project)
        else:
            found = self._get(request.resource_type, request.project)
        return project_attributes_pb2.ProjectAttributesGetResponse(attributes=project_attributes_pb2.ProjectAttributes(
            project=request.project, matching_attributes=found))

    def _project_execution_config(self, project: str) -> M.MatchingAttributes:
        """A project's workflow execution config over the server's defaults, as FlyteAdmin answers it (also
        when the project sets none)."""
        with self.ctx.db.session() as session:
            _check(session, project, "")
            found = repo.get(session, M.WORKFLOW_EXECUTION_CONFIG, project) or M.MatchingAttributes()
        config = found.workflow_execution_config
        config.max_parallelism = config.max_parallelism or self.ctx.config.engine.default_max_parallelism
        if not config.raw_output_data_config.output_location_prefix:
            config.raw_output_data_config.output_location_prefix = self.ctx.blobs.raw_output_prefix()
        return found

    def DeleteProjectAttributes(self, request: project_attributes_pb2.ProjectAttributesDeleteRequest, context=None):
        self._delete(request.resource_type, request.project)
        return project_attributes_pb2.ProjectAttributesDeleteResponse()

    def UpdateProjectDomainAttributes(self, request: project_domain_attributes_pb2.ProjectDomainAttributesUpdateRequest,
                                      context=None):
        a = request.attributes
        _need_domain(a.domain)
        self._update(a.matching_attributes, a.project, a.domain)
        return project_domain_attributes_pb2.ProjectDomainAttributesUpdateResponse()

    def GetProjectDomainAttributes(self, request: project_domain_attributes_pb2.ProjectDomainAttributesGetRequest,
                                   context=None):
        _need_domain(request.domain)
        found = self._get(request.resource_type, request.project, request.domain)
        return project_domain_attributes_pb2.ProjectDomainAttributesGetResponse(
            attributes=project_domain_attributes_pb2.ProjectDomainAttributes(
                project=request.project, domain=request.domain, matching_attributes=found))

    def DeleteProjectDomainAttributes(self, request: project_domain_attributes_pb2.ProjectDomainAttributesDeleteRequest,
                                      context=None):
        _need_domain(request.domain)
        self._delete(request.resource_type, request.project, request.domain)
        return project_domain_attributes_pb2.ProjectDomainAttributesDeleteResponse()

    def UpdateWorkflowAttributes(self, request: workflow_attributes_pb2.WorkflowAttributesUpdateRequest, context=None):
        a = request.attributes
        if not (a.domain and a.workflow):
            raise InvalidArgument("workflow attributes need the project, domain and workflow name")
        self._update(a.matching_attributes, a.project, a.domain, a.workflow)
        return workflow_attributes_pb2.WorkflowAttributesUpdateResponse()

    def GetWorkflowAttributes(self, request: workflow_attributes_pb2.WorkflowAttributesGetRequest, context=None):
        if not (request.domain and request.workflow):
            raise InvalidArgument("workflow attributes need the project, domain and workflow name")
        found = self._get(request.resource_type, request.project, request.domain, request.workflow)
        return workflow_attributes_pb2.WorkflowAttributesGetResponse(attributes=workflow_attributes_pb2.WorkflowAttributes(
            project=request.project, domain=request.domain, workflow=request.workflow, matching_attributes=found))

    def DeleteWorkflowAttributes(self, request: workflow_attributes_pb2.WorkflowAttributesDeleteRequest, context=None):
        if not (request.domain and request.workflow):
            raise InvalidArgument("workflow attributes need the project, domain and workflow name")
        self._delete(request.resource_type, request.project, request.domain, request.workflow)
        return workflow_attributes_pb2.WorkflowAttributesDeleteResponse()

    def ListMatchableAttributes(self, request: M.ListMatchableAttributesRequest, context=None):
        with self.ctx.db.session() as session:
            rows = repo.all_of(session, request.resource_type)
        return M.ListMatchableAttributesResponse(configurations=[
            M.MatchableAttributesConfiguration(
                attributes=M.MatchingAttributes.FromString(r.attributes_pb), project=r.project, domain=r.domain,
                workflow=r.workflow, launch_plan=r.launch_plan) for r in rows])
