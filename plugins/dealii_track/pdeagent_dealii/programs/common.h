// pdeagent deal.II common library of the calibration programs (header-only, inlined by
// bundle.py): case_spec reading, muparser expressions, boundary data, periodic
// constraints, grid sampling, output files and the program's main().
//
//   #include "common.h"     // includes meshing.h
//
//   pdeagent::variables<dim>(time)            "x,y" / "x,y,z" (+ ",t")
//   pdeagent::expression(json)                muparser text of a string or a number
//   pdeagent::parse(fp, expr, time)           scalar FunctionParser from a case expression
//   pdeagent::parse_vector(fp, list, time)    n-component FunctionParser from a list
//   pdeagent::is_transient(spec)              spec["pde"]["time"] is set
//   pdeagent::time_steps(spec, dt)            (n, dt') with n * dt' = t_end - t0 exactly
//   pdeagent::add_dirichlet(mapping, dofs, tags, spec, constraints, t, mask)
//   pdeagent::add_periodic(dofs, tags, spec, constraints)   call BEFORE add_dirichlet
//   pdeagent::BoundaryData<dim>               Neumann flux / Robin (alpha, g) per boundary id
//                                             (entries sharing an id add up)
//   pdeagent::write_solution(outdir, spec, mapping, dofs, u, n)  the output arrays of an
//                                             unknown with n (1 or dim) components
//   pdeagent::write_meta(outdir, start, solver_info)
//   pdeagent::main_program("name", argc, argv, run<2>, run<3>)
//
// Output conventions (SPEC §output): the requested field is `output.field`; with
// `output.components` (e.g. u_x, u_y) one grid per component is written, component c of
// the FE vector = array c; a field named "*_magnitude" is |(u_0, ..., u_{dim-1})|; a
// scalar field is FE component 0 (see write_solution for the checks).  A flow case's
// `output.pressure` (`{"array": "p", "normalization": ...}`) asks for the pressure as
// well: it is written as solution_grid_<output.pressure.array>.bin besides the velocity
// array(s), which then go to solution_grid_<name>.bin too (one file per array when the
// output names several).  Values are NaN at grid points outside the mesh.
#pragma once

#include <deal.II/base/bounding_box.h>
#include <deal.II/base/function_parser.h>
#include <deal.II/base/geometry_info.h>
#include <deal.II/dofs/dof_handler.h>
#include <deal.II/dofs/dof_tools.h>
#include <deal.II/fe/component_mask.h>
#include <deal.II/fe/mapping.h>
#include <deal.II/grid/grid_tools.h>
#include <deal.II/lac/affine_constraints.h>
#include <deal.II/lac/vector.h>
#include <deal.II/numerics/rtree.h>
#include <deal.II/numerics/vector_tools.h>

#include <nlohmann/json.hpp>

#include "meshing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace pdeagent
{
  using json = nlohmann::json;

  template <int dim>
  std::string variables(const bool time = false)
  {
    return std::string(dim == 2 ? "x,y" : "x,y,z") + (time ? ",t" : "");
  }

  // A JSON number as muparser text, exactly (std::to_string keeps 6 decimals only).
  inline std::string number(const json &value)
  {
    std::ostringstream text;
    text << std::setprecision(17) << value.get<double>();
    return text.str();
  }

  // A case expression (muparser string) or a plain number as muparser text.
  inline std::string expression(const json &value)
  {
    if (value.is_string())
      return value.get<std::string>();
    if (value.is_number())
      return number(value);
    throw std::runtime_error("expected an expression or a number, got " + value.dump());
  }

  inline bool is_transient(const json &spec)
  {
    return spec["pde"].contains("time") && !spec["pde"]["time"].is_null();
  }

  // Scalar FunctionParser; with `time` the variable t is FunctionTime's time (set_time).
  template <int dim>
  void parse(dealii::FunctionParser<dim> &function, const json &value, const bool time = false)
  {
    function.initialize(variables<dim>(time), expression(value), {}, time);
  }

  // Vector FunctionParser (n_components = value.size()).
  template <int dim>
  void parse_vector(dealii::FunctionParser<dim> &function, const json &value,
                    const bool time = false)
  {
    std::vector<std::string> parts;
    for (const auto &v : value)
      parts.push_back(expression(v));
    function.initialize(variables<dim>(time), parts, {}, time);
  }

  // Number of steps and step size so that n * dt ends exactly at t_end (dt rounded down).
  inline std::pair<unsigned int, double> time_steps(const json &spec, const double dt)
  {
    const double t0 = spec["pde"]["time"]["t0"], t_end = spec["pde"]["time"]["t_end"];
    if (!(t_end > t0) || !(dt > 0))
      throw std::runtime_error("bad time interval or step");
    const auto n = static_cast<unsigned int>(std::max(1.0, std::ceil((t_end - t0) / dt - 1e-9)));
    return {n, (t_end - t0) / n};
  }

  // Periodic constraints of spec["bc"]["periodic"] ({"axis", "boundary", "partner"}),
  // all pairs collected first so that corners are identified consistently.  Call it
  // before add_dirichlet (Dirichlet values never overwrite an existing constraint).
  template <int dim>
  void add_periodic(const dealii::DoFHandler<dim> &dofs, const std::vector<std::string> &tags,
                    const json &spec, dealii::AffineConstraints<double> &constraints)
  {
    const json &periodic = spec["bc"]["periodic"];
    if (periodic.empty())
      return;
    std::vector<dealii::GridTools::PeriodicFacePair<
      typename dealii::DoFHandler<dim>::cell_iterator>>
      pairs;
    for (const auto &entry : periodic)
      {
        const std::string axis = entry["axis"];
        const int direction = axis == "x" ? 0 : axis == "y" ? 1 : axis == "z" ? 2 : -1;
        if (direction < 0 || direction >= dim)
          throw std::runtime_error("bad periodic axis " + axis);
        const auto a = boundary_ids(tags, {entry["boundary"].get<std::string>()});
        const auto b = boundary_ids(tags, {entry["partner"].get<std::string>()});
        if (a.size() != 1 || b.size() != 1)
          throw std::runtime_error("periodic boundary names must be single tags");
        const std::size_t before = pairs.size();
        dealii::GridTools::collect_periodic_faces(dofs, a[0], b[0], direction, pairs);
        if (pairs.size() == before)
          throw std::runtime_error("no matching periodic faces for " + entry.dump());
      }
    dealii::DoFTools::make_periodicity_constraints<dim, dim>(pairs, constraints);
  }

  // Dirichlet conditions of the case at time t (spec["muparser"]["bc"]["dirichlet"]):
  // a scalar value constrains the components in `mask` (default: all; for vector
  // data the list's components go to the first value.size() components, the rest of the
  // FE system is left free).  On dofs several conditions share, the last one wins, as
  // in DOLFINx (deal.II keeps a dof's first constraint, so they go in reverse order).
  // Returns the number of conditions applied.
  template <int dim>
  unsigned int add_dirichlet(const dealii::Mapping<dim> &mapping,
                             const dealii::DoFHandler<dim> &dofs,
                             const std::vector<std::string> &tags, const json &spec,
                             dealii::AffineConstraints<double> &constraints, const double t = 0,
                             const dealii::ComponentMask &mask = {})
  {
    const json &conditions = spec["bc"]["dirichlet"];
    const json &mirrored = spec["muparser"]["bc"]["dirichlet"];
    const unsigned int n_components = dofs.get_fe().n_components();
    const bool time = is_transient(spec);
    for (std::size_t c = conditions.size(); c-- > 0;)
      {
        const json &value = mirrored[c]["value"];
        std::vector<std::string> parts(n_components, "0");
        dealii::ComponentMask used = mask;
        if (value.is_array())
          {
            std::vector<bool> selected(n_components, false);
            for (std::size_t k = 0; k < value.size() && k < n_components; ++k)
              parts[k] = expression(value[k]), selected[k] = true;
            used = dealii::ComponentMask(selected);
          }
        else
          for (auto &part : parts)
            part = expression(value);
        dealii::FunctionParser<dim> g(n_components);
        g.initialize(variables<dim>(time), parts, {}, time);
        g.set_time(t);
        for (const auto id : boundary_ids(tags, conditions[c]["boundary"]))
          dealii::VectorTools::interpolate_boundary_values(mapping, dofs, id, g, constraints,
                                                           used);
      }
    return conditions.size();
  }

  // Neumann (flux g) and Robin (alpha, g) data of a scalar problem.  Entries that share
  // a boundary id add up (as separate boundary integrals do); set_time(t) updates
  // every parser.  Per boundary id: has_flux / flux(id, x), has_robin / robin_alpha /
  // robin_value (sums over the entries naming the id).
  template <int dim>
  class BoundaryData
  {
  public:
    BoundaryData(const std::vector<std::string> &tags, const json &spec)
    {
      const bool time = is_transient(spec);
      const json &bc = spec["bc"], &mp = spec["muparser"]["bc"];
      for (std::size_t c = 0; c < bc["neumann"].size(); ++c)
        {
          Entry entry{boundary_ids(tags, bc["neumann"][c]["boundary"]),
                      std::make_unique<dealii::FunctionParser<dim>>(1), nullptr};
          parse(*entry.value, mp["neumann"][c]["value"], time);
          fluxes.push_back(std::move(entry));
        }
      for (std::size_t c = 0; c < bc["robin"].size(); ++c)
        {
          Entry entry{boundary_ids(tags, bc["robin"][c]["boundary"]),
                      std::make_unique<dealii::FunctionParser<dim>>(1),
                      std::make_unique<dealii::FunctionParser<dim>>(1)};
          parse(*entry.value, mp["robin"][c]["value"], time);
          parse(*entry.alpha, mp["robin"][c]["alpha"], time);
          robins.push_back(std::move(entry));
        }
    }

    bool empty() const
    {
      return fluxes.empty() && robins.empty();
    }

    bool has_flux(const dealii::types::boundary_id id) const
    {
      return covers(fluxes, id);
    }

    bool has_robin(const dealii::types::boundary_id id) const
    {
      return covers(robins, id);
    }

    double flux(const dealii::types::boundary_id id, const dealii::Point<dim> &x) const
    {
      double sum = 0;
      for (const auto &e : fluxes)
        if (e.names(id))
          sum += e.value->value(x);
      return sum;
    }

    double robin_value(const dealii::types::boundary_id id, const dealii::Point<dim> &x) const
    {
      double sum = 0;
      for (const auto &e : robins)
        if (e.names(id))
          sum += e.value->value(x);
      return sum;
    }

    double robin_alpha(const dealii::types::boundary_id id, const dealii::Point<dim> &x) const
    {
      double sum = 0;
      for (const auto &e : robins)
        if (e.names(id))
          sum += e.alpha->value(x);
      return sum;
    }

    void set_time(const double t)
    {
      for (auto *group : {&fluxes, &robins})
        for (auto &e : *group)
          {
            e.value->set_time(t);
            if (e.alpha)
              e.alpha->set_time(t);
          }
    }

  private:
    struct Entry
    {
      std::vector<dealii::types::boundary_id> ids;
      std::unique_ptr<dealii::FunctionParser<dim>> value, alpha;

      bool names(const dealii::types::boundary_id id) const
      {
        return std::find(ids.begin(), ids.end(), id) != ids.end();
      }
    };

    static bool covers(const std::vector<Entry> &entries, const dealii::types::boundary_id id)
    {
      for (const auto &e : entries)
        if (e.names(id))
          return true;
      return false;
    }

    std::vector<Entry> fluxes, robins;
  };

  // The evaluation-grid points, row-major [k][j][i] (x fastest).
  template <int dim>
  std::vector<dealii::Point<dim>> grid_points(const json &grid)
  {
    const std::vector<double> box = grid["bbox"].get<std::vector<double>>();
    const unsigned int nx = grid["nx"], ny = grid["ny"];
    const unsigned int nz = dim == 3 ? grid["nz"].get<unsigned int>() : 1;
    std::vector<dealii::Point<dim>> points;
    points.reserve(std::size_t(nx) * ny * nz);
    for (unsigned int k = 0; k < nz; ++k)
      for (unsigned int j = 0; j < ny; ++j)
        for (unsigned int i = 0; i < nx; ++i)
          {
            dealii::Point<dim> p;
            p[0] = box[0] + (box[1] - box[0]) * i / (nx - 1);
            p[1] = box[2] + (box[3] - box[2]) * j / (ny - 1);
            if (dim == 3)
              p[2] = box[4] + (box[5] - box[4]) * k / (nz - 1);
            points.push_back(p);
          }
    return points;
  }

  // All FE components at every grid point: result[c][n]; NaN outside the mesh.  The
  // candidate cells of a point come from an rtree of the cells' bounding boxes (under
  // `mapping`, slightly enlarged), and the point is mapped back into each candidate
  // until one contains it (unit-cell tolerance 1e-10), so a point outside the mesh
  // costs one box query (a point-by-point FEFieldFunction search costs seconds per
  // thousand outside points on curved domains with holes).
  template <int dim, typename VectorType>
  std::vector<std::vector<double>> sample(const dealii::Mapping<dim> &mapping,
                                          const dealii::DoFHandler<dim> &dofs,
                                          const VectorType &u, const json &grid)
  {
    using Box = std::pair<dealii::BoundingBox<dim>, unsigned int>;
    std::vector<typename dealii::DoFHandler<dim>::active_cell_iterator> cells;
    std::vector<Box> boxes;
    for (const auto &cell : dofs.active_cell_iterators())
      {
        dealii::BoundingBox<dim> box = mapping.get_bounding_box(cell);
        box.extend(1e-3 * cell->diameter()); // curved faces may bulge past their points
        boxes.emplace_back(box, cells.size());
        cells.push_back(cell);
      }
    const auto tree = dealii::pack_rtree(boxes);

    const auto &fe = dofs.get_fe();
    const unsigned int n_components = fe.n_components();
    const auto points = grid_points<dim>(grid);
    std::vector<std::vector<double>> values(
      n_components,
      std::vector<double>(points.size(), std::numeric_limits<double>::quiet_NaN()));
    std::vector<dealii::types::global_dof_index> ids(fe.n_dofs_per_cell());
    std::vector<Box> candidates;
    for (std::size_t n = 0; n < points.size(); ++n)
      {
        candidates.clear();
        tree.query(boost::geometry::index::intersects(points[n]),
                   std::back_inserter(candidates));
        for (const auto &candidate : candidates)
          {
            const auto &cell = cells[candidate.second];
            dealii::Point<dim> unit;
            try
              {
                unit = mapping.transform_real_to_unit_cell(cell, points[n]);
              }
            catch (const std::exception &)
              {
                continue; // the point is far from this cell
              }
            if (!dealii::GeometryInfo<dim>::is_inside_unit_cell(unit, 1e-10))
              continue;
            cell->get_dof_indices(ids);
            for (unsigned int c = 0; c < n_components; ++c)
              values[c][n] = 0;
            for (unsigned int i = 0; i < ids.size(); ++i)
              {
                const double coefficient = u[ids[i]];
                for (unsigned int c = 0; c < n_components; ++c)
                  values[c][n] += coefficient * fe.shape_value_component(i, unit, c);
              }
            break;
          }
      }
    return values;
  }

  inline void write_grid(const std::string &path, const std::vector<double> &values)
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char *>(values.data()),
              std::streamsize(values.size() * sizeof(double)));
    if (!out)
      throw std::runtime_error("could not write " + path);
  }

  // The pressure array a flow case's output asks for (`output.pressure.array`), or ""
  // when it asks for none (no `pressure` entry, null, false or an empty object).
  inline std::string pressure_array(const json &output)
  {
    if (!output.is_object() || !output.contains("pressure"))
      return "";
    const json &pressure = output["pressure"];
    if (pressure.is_null() || (pressure.is_boolean() && !pressure.get<bool>()) ||
        (pressure.is_object() && pressure.empty()))
      return "";
    if (!pressure.is_object() || !pressure.contains("array") ||
        !pressure["array"].is_string() || pressure["array"].get<std::string>().empty())
      throw std::runtime_error("output.pressure must name its array, got " + pressure.dump());
    return pressure["array"].get<std::string>();
  }

  // The names of the output arrays, in order: output.components (or output.field), then
  // the pressure array when the output asks for one.  One array goes to
  // solution_grid.bin, several to one solution_grid_<name>.bin each.
  inline std::vector<std::string> output_arrays(const json &output)
  {
    std::vector<std::string> names;
    if (output.contains("components") && output["components"].is_array() &&
        !output["components"].empty())
      for (const auto &name : output["components"])
        names.push_back(name.get<std::string>());
    else
      names.push_back(output["field"].get<std::string>());
    const std::string pressure = pressure_array(output);
    if (!pressure.empty() && std::find(names.begin(), names.end(), pressure) == names.end())
      names.push_back(pressure);
    return names;
  }

  // What the case's output requirements ask of an FE solution whose primary unknown has
  // `field_components` components at FE components 0, 1, ... (1: a scalar such as u; dim:
  // a vector such as the displacement or the velocity) and, when `has_pressure`, a
  // pressure at FE component field_components:
  //   output.components [u_x, u_y(, u_z)] -> one grid per component (needs dim of them);
  //   a field named "*_magnitude"         -> |(u_0, ..., u_{dim-1})| (needs a vector);
  //   a field u_x, u_y or u_z             -> that component of a vector unknown;
  //   a field p or pressure               -> the pressure;
  //   any other field                     -> component 0 (needs a scalar unknown);
  //   output.pressure {"array": name}     -> also the pressure, as array `name`.
  // Anything else throws, naming what was asked for; call it before solving to fail early.
  struct OutputPlan
  {
    enum Kind
    {
      listed_components, // one grid per output.components entry
      magnitude,         // |vector unknown|
      one_component      // FE component `component`
    } kind;
    unsigned int component = 0;
    std::string pressure = ""; // the pressure array's name ("": none asked for)
  };

  template <int dim>
  OutputPlan field_output_plan(const json &spec, const unsigned int field_components,
                               const bool has_pressure)
  {
    const json &output = spec["output"];
    const std::string field = output["field"];
    const bool listed = output.contains("components") && output["components"].is_array() &&
                        !output["components"].empty();
    const std::string suffix = "_magnitude";
    const bool vector = field_components == dim;
    if (field_components != 1 && !vector)
      throw std::runtime_error("output_plan: the unknown must have 1 or dim components");
    if (listed)
      {
        if (!(vector && output["components"].size() == dim))
          throw std::runtime_error("cannot write the output components " +
                                   output["components"].dump() + " of a " +
                                   std::to_string(field_components) + "-component unknown");
        return {OutputPlan::listed_components};
      }
    if (field.size() > suffix.size() &&
        field.compare(field.size() - suffix.size(), suffix.size(), suffix) == 0)
      {
        if (!vector)
          throw std::runtime_error("cannot write " + field + " of a scalar unknown");
        return {OutputPlan::magnitude};
      }
    if (field == "p" || field == "pressure")
      {
        if (!has_pressure)
          throw std::runtime_error("cannot write " + field + ": the problem has no pressure");
        return {OutputPlan::one_component, field_components};
      }
    const std::vector<std::string> axes = {"u_x", "u_y", "u_z"};
    if (vector)
      {
        for (unsigned int c = 0; c < dim; ++c)
          if (field == axes[c])
            return {OutputPlan::one_component, c};
        throw std::runtime_error("cannot write the scalar field " + field +
                                 " of a vector unknown");
      }
    return {OutputPlan::one_component, 0};
  }

  template <int dim>
  OutputPlan output_plan(const json &spec, const unsigned int field_components,
                         const bool has_pressure = false)
  {
    OutputPlan plan = field_output_plan<dim>(spec, field_components, has_pressure);
    plan.pressure = pressure_array(spec["output"]);
    if (!plan.pressure.empty() && !has_pressure)
      throw std::runtime_error("cannot write the pressure array " + plan.pressure +
                               " (output.pressure): the problem has no pressure");
    return plan;
  }

  // The arrays output_plan describes, sampled from u (NaN outside the mesh), written as
  // solution_grid.bin, or one solution_grid_<name>.bin per array (output_arrays) when
  // the output names several: listed components, or a field plus the pressure.
  template <int dim, typename VectorType>
  void write_solution(const std::string &outdir, const json &spec,
                      const dealii::Mapping<dim> &mapping, const dealii::DoFHandler<dim> &dofs,
                      const VectorType &u, const unsigned int field_components = 1)
  {
    const OutputPlan plan = output_plan<dim>(spec, field_components,
                                             dofs.get_fe().n_components() > field_components);
    const auto values = sample(mapping, dofs, u, spec["eval_grid"]);
    const bool several = output_arrays(spec["output"]).size() > 1;
    if (!plan.pressure.empty())
      write_grid(outdir + "/solution_grid_" + plan.pressure + ".bin", values[field_components]);
    const std::string field_file =
      several ? outdir + "/solution_grid_" + spec["output"]["field"].get<std::string>() + ".bin" :
                outdir + "/solution_grid.bin";
    if (plan.kind == OutputPlan::listed_components)
      {
        for (unsigned int c = 0; c < dim; ++c)
          write_grid(outdir + "/solution_grid_" +
                       spec["output"]["components"][c].get<std::string>() + ".bin",
                     values[c]);
        return;
      }
    if (plan.kind == OutputPlan::magnitude)
      {
        std::vector<double> length(values[0].size(), 0.0);
        for (std::size_t n = 0; n < length.size(); ++n)
          {
            double sum = 0;
            for (unsigned int c = 0; c < dim; ++c)
              sum += values[c][n] * values[c][n];
            length[n] = std::sqrt(sum); // NaN stays NaN
          }
        write_grid(field_file, length);
        return;
      }
    write_grid(field_file, values[plan.component]);
  }

  inline void write_meta(const std::string &outdir,
                         const std::chrono::steady_clock::time_point &start,
                         const json &solver_info)
  {
    const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const json meta = {{"wall_time_sec", seconds}, {"status", "ok"}, {"solver_info", solver_info}};
    std::ofstream(outdir + "/meta.json") << meta.dump();
  }

  // main(): reads argv[1], dispatches on the dimension of the domain's bounds, turns
  // every exception into a message on stderr and exit status 1.
  template <typename Run2, typename Run3>
  int main_program(const char *name, int argc, char **argv, Run2 run2, Run3 run3)
  {
    if (argc < 3)
      {
        std::cerr << "usage: solver case_spec.json OUTDIR\n";
        return 2;
      }
    try
      {
        std::ifstream in(argv[1]);
        if (!in)
          throw std::runtime_error(std::string("cannot read ") + argv[1]);
        const json spec = json::parse(in);
        if (spec["domain"]["bounds"].size() == 3)
          return run3(spec, std::string(argv[2]));
        return run2(spec, std::string(argv[2]));
      }
    catch (const std::exception &error)
      {
        std::cerr << "pdeagent " << name << ": " << error.what() << "\n";
        return 1;
      }
  }
} // namespace pdeagent
