// Test driver of the deal.II ladder's node lattices (used by
// test_dealii_grid_alignment.py): where the nodes of a calibration rung's scored fields
// really are.
//
//   grid_support_points jobs.json -> one JSON line per job
//
// A job is {"domain": <case_spec.domain>, "resolution": r, "element": "q" | "taylor_hood",
// "degree": p, "mapping_degree": m}.  The mesh is built as the calibration programs
// build it (h = pdeagent::mesh_size(domain, r), pdeagent::build_mesh(domain, h, ...), no
// refinement); the finite element is FE_Q<dim>(p) ("q") or the Taylor-Hood system
// FESystem<dim>(FE_Q<dim>(p), dim, FE_Q<dim>(p - 1), 1) ("taylor_hood", as stokes.cc and
// navier_stokes.cc with p the velocity degree), with MappingQ<dim>(m).  The answer is
// {"cells": n_active_cells, "fields": [{"degree": q, "points": [x0, y0(, z0), x1, ...]}]}:
// the support points (DoFTools::map_dofs_to_support_points) of FE component 0 (the
// scalar, or the velocity's x component: all velocity components share their points)
// and, for Taylor-Hood, of the pressure (component dim), flattened.
#include <deal.II/base/point.h>
#include <deal.II/dofs/dof_handler.h>
#include <deal.II/dofs/dof_tools.h>
#include <deal.II/fe/component_mask.h>
#include <deal.II/fe/fe_q.h>
#include <deal.II/fe/fe_system.h>
#include <deal.II/fe/mapping_q.h>
#include <deal.II/grid/tria.h>

#include "meshing.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace dealii;
using json = nlohmann::json;

template <int dim>
json points_of(const Mapping<dim> &mapping, const DoFHandler<dim> &dofs,
               const unsigned int component)
{
  std::vector<bool> selected(dofs.get_fe().n_components(), false);
  selected[component] = true;
  std::map<types::global_dof_index, Point<dim>> points;
  DoFTools::map_dofs_to_support_points(mapping, dofs, points, ComponentMask(selected));
  std::vector<double> flat;
  flat.reserve(points.size() * dim);
  for (const auto &entry : points)
    for (unsigned int d = 0; d < dim; ++d)
      flat.push_back(entry.second[d]);
  return flat;
}

template <int dim>
json run(const json &job)
{
  const json &domain = job.at("domain");
  const int resolution = job.at("resolution").get<int>();
  const unsigned int degree = job.at("degree").get<unsigned int>();
  const std::string element = job.at("element").get<std::string>();

  Triangulation<dim> tria;
  std::vector<std::string> tags;
  const double h = pdeagent::mesh_size(domain, resolution);
  pdeagent::build_mesh(domain, h, tria, tags);

  std::unique_ptr<FiniteElement<dim>> fe;
  if (element == "q")
    fe = std::make_unique<FE_Q<dim>>(degree);
  else if (element == "taylor_hood")
    fe = std::make_unique<FESystem<dim>>(FE_Q<dim>(degree), dim, FE_Q<dim>(degree - 1), 1);
  else
    throw std::invalid_argument("unknown element " + element);
  const MappingQ<dim> mapping(job.at("mapping_degree").get<unsigned int>());
  DoFHandler<dim> dofs(tria);
  dofs.distribute_dofs(*fe);

  json fields = json::array();
  fields.push_back({{"degree", degree}, {"points", points_of(mapping, dofs, 0)}});
  if (element == "taylor_hood")
    fields.push_back({{"degree", degree - 1}, {"points", points_of(mapping, dofs, dim)}});
  return {{"cells", tria.n_active_cells()}, {"fields", fields}};
}

int main(int argc, char **argv)
{
  if (argc != 2)
    {
      std::cerr << "usage: grid_support_points jobs.json\n";
      return 2;
    }
  try
    {
      std::ifstream in(argv[1]);
      const json jobs = json::parse(in);
      for (const auto &job : jobs)
        {
          const bool cube = job.at("domain").at("type") == "unit_cube";
          std::cout << (cube ? run<3>(job) : run<2>(job)).dump() << "\n";
        }
    }
  catch (const std::exception &error)
    {
      std::cerr << "grid_support_points: " << error.what() << "\n";
      return 1;
    }
  return 0;
}
