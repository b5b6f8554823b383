// pdeagent meshing for deal.II 9.4: quadrilateral / hexahedral meshes of the 14
// pdeagent domain templates with tagged boundaries (header-only).
//
// Usage
// -----
//   #include "meshing.h"   // needs deal.II, nlohmann/json and the gmsh C++ API
//                          // (link /usr/lib/x86_64-linux-gnu/libgmsh.so)
//   dealii::Triangulation<2> tria;
//   std::vector<std::string> tags;
//   pdeagent::build_mesh(case_spec["domain"], h, tria, tags);
//   for (auto id : pdeagent::boundary_ids(tags, bc["boundary"]))   // "all" -> every id
//     VectorTools::interpolate_boundary_values(dofs, id, g, constraints);
//
//   pdeagent::mesh_size(domain, resolution)  = longest bbox side / resolution (the h
//   that the DOLFINx track's build_domain(domain, resolution) uses).
//
// What you get
// ------------
// - `tags` are the template's boundary tag names (core/pdeagent/geometry/templates.py
//   `boundary_tags`, in that order); every boundary face has boundary_id = the index of
//   its tag in `tags`.  A face gets the tag of the boundary piece (straight segment or
//   circular arc) nearest to its centre, exactly as the core classifies boundary points.
//   unit_square / periodic_square: xmin, xmax, ymin, ymax (ids 0..3); unit_cube: xmin,
//   xmax, ymin, ymax, zmin, zmax (ids 0..5).
// - unit_square / periodic_square / unit_cube: GridGenerator::subdivided_hyper_cube with
//   n = ceil(1 / h) cells per side (periodic faces match vertex for vertex, ready for
//   GridTools::collect_periodic_faces(tria, 0, 1, 0, ...) and (tria, 2, 3, 1, ...)).
// - every other template: gmsh 4.8 OpenCASCADE geometry (ported from the DOLFINx track's
//   _meshing.py, same parameter defaults), meshed with MeshSizeMax = h, the
//   Frontal-Delaunay algorithm and blossom recombination (Mesh.RecombineAll); if gmsh
//   leaves any triangle, the mesh is regenerated at size 2h and every cell is subdivided
//   into quadrilaterals (Mesh.SubdivisionAlgorithm = 1).  The result is read through a
//   temporary MSH 2.2 file under /tmp (removed again) with GridIn<2>::read_msh; every cell
//   is checked to be a quadrilateral.  gmsh is initialised and finalised inside
//   build_mesh (do not call it while your own code holds gmsh initialised); its terminal
//   output is switched off, and stdout (fd 1) goes to /dev/null while gmsh runs (the
//   blossom recombination prints warnings with printf).
// - Curved boundaries: every boundary face lying on a circular arc (circle, annulus,
//   eccentric_annulus, square_with_hole, multi_hole, sector's arc, dumbbell's disks) gets
//   manifold id 1 + (index of the arc among the pieces) carrying a SphericalManifold<2>
//   around the arc's centre, so refine_global() puts new boundary vertices on the circle
//   and MappingQ(p) curves those faces.  The star's boundary faces get manifold id 1
//   with its exact polar outline r(theta) = r0 (1 + amplitude cos(n theta)) (gmsh
//   meshes it through a spline of >= 200 points on that outline).  Interior cells keep
//   the flat manifold (fine for a few refinements of a mesh built at the target size).
//   No manifold is attached to the polygonal templates (not needed).
//   Pass attach_manifolds = false to get plain polygonal boundaries.
// - With the default MappingQ1 the domain is the polygon through the boundary vertices;
//   its area differs from the exact one by O(h^2) on curved templates.
#pragma once

#include <deal.II/base/point.h>
#include <deal.II/grid/grid_generator.h>
#include <deal.II/grid/grid_in.h>
#include <deal.II/grid/manifold_lib.h>
#include <deal.II/grid/reference_cell.h>
#include <deal.II/grid/tria.h>

#include <gmsh.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <fcntl.h>
#include <unistd.h>
#include <vector>

namespace pdeagent
{
  namespace meshing_detail
  {
    using json = nlohmann::json;
    constexpr double pi = 3.14159265358979323846;

    // Default geometry parameters of each template (core/pdeagent/geometry/templates.py).
    inline json defaults(const std::string &name)
    {
      if (name == "unit_square" || name == "periodic_square" || name == "unit_cube")
        return json::object();
      if (name == "l_shape")
        return {{"corner", {0.5, 0.5}}};
      if (name == "square_with_hole")
        return {{"center", {0.5, 0.5}}, {"radius", 0.2}};
      if (name == "multi_hole")
        return {{"holes", {{0.3, 0.3, 0.12}, {0.7, 0.3, 0.12}, {0.5, 0.7, 0.15}}}};
      if (name == "circle")
        return {{"center", {0.5, 0.5}}, {"radius", 0.5}};
      if (name == "annulus")
        return {{"center", {0.0, 0.0}}, {"r_inner", 0.5}, {"r_outer", 1.0}};
      if (name == "eccentric_annulus")
        return {{"center_outer", {0.0, 0.0}},
                {"r_outer", 1.0},
                {"center_inner", {0.2, 0.0}},
                {"r_inner", 0.4}};
      if (name == "sector")
        return {{"center", {0.0, 0.0}},
                {"radius", 1.0},
                {"angle_start", 0.0},
                {"angle_end", 1.5 * pi}};
      if (name == "star")
        return {{"center", {0.5, 0.5}}, {"r0", 0.35}, {"amplitude", 0.25}, {"n_points", 5}};
      if (name == "gear")
        return {{"center", {0.5, 0.5}},
                {"r_root", 0.3},
                {"r_tip", 0.4},
                {"n_teeth", 12},
                {"root_fraction", 0.5},
                {"tip_fraction", 0.3}};
      if (name == "t_junction")
        return {{"bar_length", 1.0},
                {"bar_height", 0.2},
                {"stem_width", 0.2},
                {"stem_length", 0.6}};
      if (name == "dumbbell")
        return {{"center_left", {0.25, 0.5}},
                {"center_right", {0.75, 0.5}},
                {"radius", 0.2},
                {"bar_width", 0.1}};
      throw std::invalid_argument(
        "pdeagent::build_mesh: unknown domain type '" + name +
        "'; known: annulus, circle, dumbbell, eccentric_annulus, gear, l_shape, multi_hole, "
        "periodic_square, sector, square_with_hole, star, t_junction, unit_cube, unit_square");
    }

    // The template's boundary tag names, in the core's order.
    inline std::vector<std::string> tag_names(const std::string &name)
    {
      if (name == "unit_square" || name == "periodic_square")
        return {"xmin", "xmax", "ymin", "ymax"};
      if (name == "unit_cube")
        return {"xmin", "xmax", "ymin", "ymax", "zmin", "zmax"};
      if (name == "l_shape")
        return {"outer", "reentrant"};
      if (name == "square_with_hole")
        return {"outer", "hole"};
      if (name == "multi_hole")
        return {"outer", "holes"};
      if (name == "annulus" || name == "eccentric_annulus")
        return {"inner", "outer"};
      if (name == "sector")
        return {"arc", "sides"};
      if (name == "t_junction")
        return {"inlet", "outlet_left", "outlet_right", "walls"};
      if (name == "circle" || name == "star" || name == "gear" || name == "dumbbell")
        return {"boundary"};
      defaults(name); // throws the "unknown domain type" error
      return {};
    }

    inline json merged_params(const std::string &name, const json &domain)
    {
      json p = defaults(name);
      if (domain.contains("geometry_params") && domain["geometry_params"].is_object())
        for (const auto &item : domain["geometry_params"].items())
          p[item.key()] = item.value();
      return p;
    }

    struct XY
    {
      double x, y;
    };

    inline XY pt(const json &p, const char *key)
    {
      return {p.at(key).at(0).get<double>(), p.at(key).at(1).get<double>()};
    }

    inline double num(const json &p, const char *key)
    {
      return p.at(key).get<double>();
    }

    // A boundary piece: a segment a-b or an arc (centre c, radius r, angles
    // [theta0, theta0 + span] counter-clockwise), carrying the index of its tag.
    struct Piece
    {
      unsigned int tag;
      bool arc;
      XY a, b;
      XY c;
      double r, theta0, span;
    };

    inline Piece seg(unsigned int tag, XY a, XY b)
    {
      return {tag, false, a, b, {0, 0}, 0, 0, 0};
    }

    inline Piece arc(unsigned int tag, XY c, double r, double theta0 = 0.0, double span = 2 * pi)
    {
      return {tag, true, {0, 0}, {0, 0}, c, r, theta0, span};
    }

    inline double seg_distance(double x, double y, XY a, XY b)
    {
      const double dx = b.x - a.x, dy = b.y - a.y, l2 = dx * dx + dy * dy;
      if (l2 == 0.0)
        return std::hypot(x - a.x, y - a.y);
      const double t = std::clamp(((x - a.x) * dx + (y - a.y) * dy) / l2, 0.0, 1.0);
      return std::hypot(x - (a.x + t * dx), y - (a.y + t * dy));
    }

    inline double arc_distance(double x, double y, const Piece &p)
    {
      const double rx = x - p.c.x, ry = y - p.c.y;
      const double radial = std::abs(std::hypot(rx, ry) - p.r);
      if (p.span >= 2 * pi)
        return radial;
      double phi = std::fmod(std::atan2(ry, rx) - p.theta0, 2 * pi);
      if (phi < 0)
        phi += 2 * pi;
      if (phi <= p.span)
        return radial;
      const double e0x = p.c.x + p.r * std::cos(p.theta0), e0y = p.c.y + p.r * std::sin(p.theta0);
      const double e1x = p.c.x + p.r * std::cos(p.theta0 + p.span),
                   e1y = p.c.y + p.r * std::sin(p.theta0 + p.span);
      return std::min(std::hypot(x - e0x, y - e0y), std::hypot(x - e1x, y - e1y));
    }

    inline double piece_distance(double x, double y, const Piece &p)
    {
      return p.arc ? arc_distance(x, y, p) : seg_distance(x, y, p.a, p.b);
    }

    struct TaggedVertex
    {
      XY p;
      unsigned int tag; // tag of the edge leaving the vertex
    };

    // Polygon templates (l_shape, t_junction, gear): vertices with the edge's tag index.
    inline std::vector<TaggedVertex> tagged_vertices(const std::string &name, const json &p)
    {
      if (name == "l_shape")
        {
          const XY c = pt(p, "corner"); // tags: 0 outer, 1 reentrant
          return {{{0.0, 0.0}, 0},
                  {{1.0, 0.0}, 0},
                  {{1.0, c.y}, 1},
                  {{c.x, c.y}, 1},
                  {{c.x, 1.0}, 0},
                  {{0.0, 1.0}, 0}};
        }
      if (name == "t_junction")
        {
          // tags: 0 inlet, 1 outlet_left, 2 outlet_right, 3 walls
          const double length = num(p, "bar_length"), hb = num(p, "bar_height");
          const double w = num(p, "stem_width"), hs = num(p, "stem_length");
          const double xs0 = 0.5 * length - 0.5 * w, xs1 = 0.5 * length + 0.5 * w;
          return {{{xs0, 0.0}, 0},
                  {{xs1, 0.0}, 3},
                  {{xs1, hs}, 3},
                  {{length, hs}, 2},
                  {{length, hs + hb}, 3},
                  {{0.0, hs + hb}, 1},
                  {{0.0, hs}, 3},
                  {{xs0, hs}, 3}};
        }
      if (name == "gear")
        {
          const XY c = pt(p, "center");
          const double r_root = num(p, "r_root"), r_tip = num(p, "r_tip");
          const int n = p.at("n_teeth").get<int>();
          const double fr = num(p, "root_fraction"), ft = num(p, "tip_fraction");
          const double pitch = 2.0 * pi / n;
          std::vector<TaggedVertex> out;
          for (int k = 0; k < n; ++k)
            {
              const double t = k * pitch;
              const double rs[4] = {r_root, r_tip, r_tip, r_root};
              const double as[4] = {t - 0.5 * fr * pitch,
                                    t - 0.5 * ft * pitch,
                                    t + 0.5 * ft * pitch,
                                    t + 0.5 * fr * pitch};
              for (int i = 0; i < 4; ++i)
                out.push_back({{c.x + rs[i] * std::cos(as[i]), c.y + rs[i] * std::sin(as[i])}, 0});
            }
          return out;
        }
      throw std::logic_error("tagged_vertices: not a polygon template: " + name);
    }

    inline void sector_geom(const json &p, double &cx, double &cy, double &r, double &a0,
                            double &span)
    {
      const XY c = pt(p, "center");
      cx = c.x;
      cy = c.y;
      r = num(p, "radius");
      a0 = num(p, "angle_start");
      span = num(p, "angle_end") - a0;
    }

    inline void dumbbell_geom(const json &p, double &xl, double &xr, double &yc, double &r,
                              double &h)
    {
      const XY left = pt(p, "center_left"), right = pt(p, "center_right");
      xl = left.x;
      yc = left.y;
      xr = right.x;
      r = num(p, "radius");
      h = 0.5 * num(p, "bar_width");
    }

    inline std::vector<Piece> rect_pieces(const unsigned int t[4])
    {
      return {seg(t[0], {0.0, 0.0}, {0.0, 1.0}),
              seg(t[1], {1.0, 0.0}, {1.0, 1.0}),
              seg(t[2], {0.0, 0.0}, {1.0, 0.0}),
              seg(t[3], {0.0, 1.0}, {1.0, 1.0})};
    }

    // The exact boundary as tagged pieces (empty for star: one tag; unit_cube: planes).
    inline std::vector<Piece> pieces(const std::string &name, const json &p)
    {
      if (name == "unit_square" || name == "periodic_square")
        {
          const unsigned int t[4] = {0, 1, 2, 3};
          return rect_pieces(t);
        }
      if (name == "l_shape" || name == "t_junction" || name == "gear")
        {
          const auto tv = tagged_vertices(name, p);
          std::vector<Piece> out;
          for (std::size_t k = 0; k < tv.size(); ++k)
            out.push_back(seg(tv[k].tag, tv[k].p, tv[(k + 1) % tv.size()].p));
          return out;
        }
      if (name == "square_with_hole" || name == "multi_hole")
        {
          const unsigned int t[4] = {0, 0, 0, 0}; // outer
          auto out = rect_pieces(t);
          if (name == "square_with_hole")
            out.push_back(arc(1, pt(p, "center"), num(p, "radius")));
          else
            for (const auto &h : p.at("holes"))
              out.push_back(arc(1, {h.at(0).get<double>(), h.at(1).get<double>()},
                                h.at(2).get<double>()));
          return out;
        }
      if (name == "circle")
        return {arc(0, pt(p, "center"), num(p, "radius"))};
      if (name == "annulus")
        return {arc(0, pt(p, "center"), num(p, "r_inner")),
                arc(1, pt(p, "center"), num(p, "r_outer"))};
      if (name == "eccentric_annulus")
        return {arc(0, pt(p, "center_inner"), num(p, "r_inner")),
                arc(1, pt(p, "center_outer"), num(p, "r_outer"))};
      if (name == "sector")
        {
          double cx, cy, r, a0, span;
          sector_geom(p, cx, cy, r, a0, span);
          const XY e0{cx + r * std::cos(a0), cy + r * std::sin(a0)};
          const XY e1{cx + r * std::cos(a0 + span), cy + r * std::sin(a0 + span)};
          return {arc(0, {cx, cy}, r, a0, span), seg(1, {cx, cy}, e0), seg(1, {cx, cy}, e1)};
        }
      if (name == "dumbbell")
        {
          double xl, xr, yc, r, h;
          dumbbell_geom(p, xl, xr, yc, r, h);
          const double alpha = std::asin(h / r), s = std::sqrt(r * r - h * h);
          const double span = 2 * pi - 2 * alpha;
          return {arc(0, {xl, yc}, r, alpha, span),
                  arc(0, {xr, yc}, r, pi + alpha, span),
                  seg(0, {xl + s, yc + h}, {xr - s, yc + h}),
                  seg(0, {xl + s, yc - h}, {xr - s, yc - h})};
        }
      return {}; // star
    }

    // Bounding box [x0, x1, y0, y1] of a 2-D template.
    inline std::vector<double> bbox2d(const std::string &name, const json &p)
    {
      if (name == "l_shape" || name == "square_with_hole" || name == "multi_hole" ||
          name == "unit_square" || name == "periodic_square")
        return {0.0, 1.0, 0.0, 1.0};
      if (name == "t_junction" || name == "gear")
        {
          std::vector<double> b{std::numeric_limits<double>::max(),
                                std::numeric_limits<double>::lowest(),
                                std::numeric_limits<double>::max(),
                                std::numeric_limits<double>::lowest()};
          for (const auto &v : tagged_vertices(name, p))
            {
              b[0] = std::min(b[0], v.p.x);
              b[1] = std::max(b[1], v.p.x);
              b[2] = std::min(b[2], v.p.y);
              b[3] = std::max(b[3], v.p.y);
            }
          return b;
        }
      if (name == "circle" || name == "annulus" || name == "eccentric_annulus" || name == "star")
        {
          const XY c = pt(p, name == "eccentric_annulus" ? "center_outer" : "center");
          const double r = name == "star"   ? num(p, "r0") * (1 + num(p, "amplitude")) :
                           name == "circle" ? num(p, "radius") :
                                              num(p, "r_outer");
          return {c.x - r, c.x + r, c.y - r, c.y + r};
        }
      if (name == "sector")
        {
          double cx, cy, r, a0, span;
          sector_geom(p, cx, cy, r, a0, span);
          std::vector<double> xs{cx, cx + r * std::cos(a0), cx + r * std::cos(a0 + span)};
          std::vector<double> ys{cy, cy + r * std::sin(a0), cy + r * std::sin(a0 + span)};
          for (int k = 0; k < 4; ++k)
            {
              const double phi = k * pi / 2;
              double d = std::fmod(phi - a0, 2 * pi);
              if (d < 0)
                d += 2 * pi;
              if (d <= span)
                {
                  xs.push_back(cx + r * std::cos(phi));
                  ys.push_back(cy + r * std::sin(phi));
                }
            }
          return {*std::min_element(xs.begin(), xs.end()),
                  *std::max_element(xs.begin(), xs.end()),
                  *std::min_element(ys.begin(), ys.end()),
                  *std::max_element(ys.begin(), ys.end())};
        }
      if (name == "dumbbell")
        {
          double xl, xr, yc, r, h;
          dumbbell_geom(p, xl, xr, yc, r, h);
          return {xl - r, xr + r, yc - r, yc + r};
        }
      throw std::logic_error("bbox2d: " + name);
    }

    // ------------------------------------------------------------------ gmsh geometry

    inline int occ_polygon(const std::vector<XY> &vertices)
    {
      namespace occ = gmsh::model::occ;
      std::vector<int> pts, lines;
      for (const auto &v : vertices)
        pts.push_back(occ::addPoint(v.x, v.y, 0.0));
      for (std::size_t k = 0; k < pts.size(); ++k)
        lines.push_back(occ::addLine(pts[k], pts[(k + 1) % pts.size()]));
      return occ::addPlaneSurface({occ::addCurveLoop(lines)});
    }

    inline void occ_build(const std::string &name, const json &p, int resolution)
    {
      namespace occ = gmsh::model::occ;
      gmsh::vectorpair out;
      std::vector<gmsh::vectorpair> out_map;
      if (name == "l_shape" || name == "t_junction" || name == "gear")
        {
          std::vector<XY> v;
          for (const auto &tv : tagged_vertices(name, p))
            v.push_back(tv.p);
          occ_polygon(v);
        }
      else if (name == "square_with_hole" || name == "multi_hole")
        {
          const int square = occ::addRectangle(0.0, 0.0, 0.0, 1.0, 1.0);
          gmsh::vectorpair disks;
          if (name == "square_with_hole")
            {
              const XY c = pt(p, "center");
              const double r = num(p, "radius");
              disks.emplace_back(2, occ::addDisk(c.x, c.y, 0.0, r, r));
            }
          else
            for (const auto &h : p.at("holes"))
              {
                const double r = h.at(2).get<double>();
                disks.emplace_back(
                  2, occ::addDisk(h.at(0).get<double>(), h.at(1).get<double>(), 0.0, r, r));
              }
          occ::cut({{2, square}}, disks, out, out_map);
        }
      else if (name == "circle")
        {
          const XY c = pt(p, "center");
          const double r = num(p, "radius");
          occ::addDisk(c.x, c.y, 0.0, r, r);
        }
      else if (name == "annulus" || name == "eccentric_annulus")
        {
          const XY co = pt(p, name == "annulus" ? "center" : "center_outer");
          const XY ci = pt(p, name == "annulus" ? "center" : "center_inner");
          const double ro = num(p, "r_outer"), ri = num(p, "r_inner");
          const int outer = occ::addDisk(co.x, co.y, 0.0, ro, ro);
          const int inner = occ::addDisk(ci.x, ci.y, 0.0, ri, ri);
          occ::cut({{2, outer}}, {{2, inner}}, out, out_map);
        }
      else if (name == "sector")
        {
          double cx, cy, r, a0, span;
          sector_geom(p, cx, cy, r, a0, span);
          const int c = occ::addPoint(cx, cy, 0.0);
          const int n_arcs = std::max(1, int(std::ceil(span / (0.5 * pi) - 1e-9)));
          std::vector<int> arc_pts;
          for (int k = 0; k <= n_arcs; ++k)
            {
              const double a = a0 + span * k / n_arcs;
              arc_pts.push_back(occ::addPoint(cx + r * std::cos(a), cy + r * std::sin(a), 0.0));
            }
          std::vector<int> curves{occ::addLine(c, arc_pts[0])};
          for (int k = 0; k < n_arcs; ++k)
            curves.push_back(occ::addCircleArc(arc_pts[k], c, arc_pts[k + 1]));
          curves.push_back(occ::addLine(arc_pts.back(), c));
          occ::addPlaneSurface({occ::addCurveLoop(curves)});
        }
      else if (name == "star")
        {
          const XY c = pt(p, "center");
          const double r0 = num(p, "r0"), a = num(p, "amplitude");
          const int n = p.at("n_points").get<int>();
          int m = std::max(200, 8 * resolution);
          m = n * ((m + n - 1) / n); // lobe tips (theta = 2 pi k / n) are interpolation points
          std::vector<int> pts;
          for (int k = 0; k < m; ++k)
            {
              const double theta = 2.0 * pi * k / m;
              const double rk = r0 * (1.0 + a * std::cos(n * theta));
              pts.push_back(
                occ::addPoint(c.x + rk * std::cos(theta), c.y + rk * std::sin(theta), 0.0));
            }
          pts.push_back(pts.front()); // first point repeated: closed periodic spline
          const int curve = occ::addSpline(pts);
          occ::addPlaneSurface({occ::addCurveLoop({curve})});
        }
      else if (name == "dumbbell")
        {
          double xl, xr, yc, r, h;
          dumbbell_geom(p, xl, xr, yc, r, h);
          const int left = occ::addDisk(xl, yc, 0.0, r, r);
          const int right = occ::addDisk(xr, yc, 0.0, r, r);
          const int bar = occ::addRectangle(xl, yc - h, 0.0, xr - xl, 2.0 * h);
          // The fusion is one surface already; removeAllDuplicates() (as in the Python
          // port) fails here in gmsh 4.8.4 ("Boolean fragments failed").
          occ::fuse({{2, left}}, {{2, right}, {2, bar}}, out, out_map);
        }
      else
        throw std::logic_error("occ_build: " + name);
      occ::synchronize();
    }

    // Sends the process's stdout to /dev/null while alive: gmsh's blossom recombination
    // prints warnings with printf, past General.Terminal = 0.
    class QuietStdout
    {
    public:
      QuietStdout()
      {
        std::fflush(stdout);
        saved = dup(1);
        const int null = open("/dev/null", O_WRONLY);
        if (saved >= 0 && null >= 0)
          dup2(null, 1);
        if (null >= 0)
          close(null);
      }
      ~QuietStdout()
      {
        std::fflush(stdout);
        if (saved >= 0)
          {
            dup2(saved, 1);
            close(saved);
          }
      }
      QuietStdout(const QuietStdout &) = delete;
      QuietStdout &operator=(const QuietStdout &) = delete;

    private:
      int saved = -1;
    };

    inline bool has_triangles()
    {
      std::vector<int> types;
      gmsh::model::mesh::getElementTypes(types, 2);
      for (int t : types)
        if (t != 3) // 3: 4-node quadrangle
          return true;
      return false;
    }

    // Mesh `name` with gmsh and write the mesh (cells only) to `path` as MSH 2.2.
    inline void gmsh_write(const std::string &name, const json &p, double h, int resolution,
                           const std::string &path)
    {
      std::cout.flush();
      QuietStdout quiet; // until gmsh is finalised
      gmsh::initialize(0, nullptr, false);
      try
        {
          gmsh::option::setNumber("General.Terminal", 0);
          gmsh::option::setNumber("General.Verbosity", 0);
          gmsh::model::add("pdeagent_" + name);
          occ_build(name, p, resolution);
          gmsh::vectorpair surfaces;
          gmsh::model::getEntities(surfaces, 2);
          std::vector<int> tags;
          for (const auto &s : surfaces)
            tags.push_back(s.second);
          gmsh::model::addPhysicalGroup(2, tags, 1); // only the cells are written
          gmsh::option::setNumber("Mesh.MeshSizeMin", 0.0);
          gmsh::option::setNumber("Mesh.MeshSizeFromCurvature", 0);
          gmsh::option::setNumber("Mesh.ElementOrder", 1);
          // Frontal-Delaunay (6); 8 (Frontal-Delaunay for quads) segfaults in gmsh 4.8.4.
          gmsh::option::setNumber("Mesh.Algorithm", 6);
          gmsh::option::setNumber("Mesh.RecombineAll", 1);
          gmsh::option::setNumber("Mesh.RecombinationAlgorithm", 1); // blossom
          gmsh::option::setNumber("Mesh.MeshSizeMax", h);
          gmsh::model::mesh::generate(2);
          if (has_triangles())
            {
              // Fall back: a mesh twice as coarse, every cell split into quadrilaterals.
              gmsh::model::mesh::clear();
              gmsh::option::setNumber("Mesh.MeshSizeMax", 2.0 * h);
              gmsh::option::setNumber("Mesh.SubdivisionAlgorithm", 1);
              gmsh::model::mesh::generate(2);
            }
          gmsh::option::setNumber("Mesh.MshFileVersion", 2.2);
          gmsh::option::setNumber("Mesh.Binary", 0);
          gmsh::write(path);
          gmsh::finalize();
        }
      catch (const std::string &message) // gmsh reports errors by throwing strings
        {
          gmsh::finalize();
          throw std::runtime_error("pdeagent::build_mesh: gmsh failed on " + name + ": " +
                                   message);
        }
      catch (...)
        {
          gmsh::finalize();
          throw;
        }
    }

    // Mesh `name` with gmsh into a quadrilateral triangulation (boundary ids still unset).
    inline void gmsh_mesh(const std::string &name, const json &p, double h, int resolution,
                          dealii::Triangulation<2> &tria)
    {
      char path[] = "/tmp/pdeagent_mesh_XXXXXX.msh";
      const int fd = mkstemps(path, 4);
      if (fd < 0)
        throw std::runtime_error("pdeagent::build_mesh: cannot create a temporary file in /tmp");
      close(fd);
      try
        {
          gmsh_write(name, p, h, resolution, path);
        }
      catch (...)
        {
          std::remove(path);
          throw;
        }
      try
        {
          dealii::GridIn<2> grid_in;
          grid_in.attach_triangulation(tria);
          std::ifstream in(path);
          grid_in.read_msh(in);
        }
      catch (...)
        {
          std::remove(path);
          throw;
        }
      std::remove(path);
      for (const auto &cell : tria.active_cell_iterators())
        if (cell->reference_cell() != dealii::ReferenceCells::Quadrilateral)
          throw std::runtime_error("pdeagent::build_mesh: gmsh left a non-quadrilateral cell "
                                   "in the mesh of " +
                                   name);
    }
    // The star's exact outline r(theta) = r0 (1 + amplitude cos(n theta)) around its
    // centre as a chart (theta, s) -> centre + s r(theta) (cos theta, sin theta):
    // boundary vertices have s = 1, so new points on boundary faces (refinement,
    // MappingQ support points) lie on the outline.
    class StarManifold : public dealii::ChartManifold<2, 2, 2>
    {
    public:
      StarManifold(const dealii::Point<2> &centre, double r0, double amplitude, int n)
        : dealii::ChartManifold<2, 2, 2>(dealii::Tensor<1, 2>({2.0 * pi, 0.0}))
        , centre(centre)
        , r0(r0)
        , amplitude(amplitude)
        , n(n)
      {}

      std::unique_ptr<dealii::Manifold<2, 2>> clone() const override
      {
        return std::make_unique<StarManifold>(centre, r0, amplitude, n);
      }

      dealii::Point<2> pull_back(const dealii::Point<2> &x) const override
      {
        const dealii::Tensor<1, 2> d = x - centre;
        const double theta = std::atan2(d[1], d[0]);
        return dealii::Point<2>(theta, d.norm() / radius(theta));
      }

      dealii::Point<2> push_forward(const dealii::Point<2> &chart) const override
      {
        const double r = chart[1] * radius(chart[0]);
        return centre + dealii::Point<2>(r * std::cos(chart[0]), r * std::sin(chart[0]));
      }

      dealii::DerivativeForm<1, 2, 2>
      push_forward_gradient(const dealii::Point<2> &chart) const override
      {
        const double theta = chart[0], s = chart[1], r = radius(theta);
        const double dr = -r0 * amplitude * n * std::sin(n * theta);
        dealii::DerivativeForm<1, 2, 2> gradient;
        gradient[0][0] = s * (dr * std::cos(theta) - r * std::sin(theta));
        gradient[1][0] = s * (dr * std::sin(theta) + r * std::cos(theta));
        gradient[0][1] = r * std::cos(theta);
        gradient[1][1] = r * std::sin(theta);
        return gradient;
      }

    private:
      double radius(double theta) const
      {
        return r0 * (1.0 + amplitude * std::cos(n * theta));
      }

      dealii::Point<2> centre;
      double r0, amplitude;
      int n;
    };
  } // namespace meshing_detail

  // Mesh size h = longest bounding-box side / resolution (as the DOLFINx track).
  inline double mesh_size(const nlohmann::json &domain, int resolution)
  {
    const std::string name = domain.at("type").get<std::string>();
    if (name == "unit_cube" || name == "unit_square" || name == "periodic_square")
      return 1.0 / resolution;
    const auto b = meshing_detail::bbox2d(name, meshing_detail::merged_params(name, domain));
    return std::max(b[1] - b[0], b[3] - b[2]) / resolution;
  }

  // 2-D templates: quadrilateral mesh of target size h, boundary ids = tag indices.
  inline void build_mesh(const nlohmann::json &domain, double h, dealii::Triangulation<2> &tria,
                         std::vector<std::string> &tags, bool attach_manifolds = true)
  {
    using namespace meshing_detail;
    const std::string name = domain.at("type").get<std::string>();
    if (!(h > 0.0))
      throw std::invalid_argument("pdeagent::build_mesh: the mesh size h must be positive");
    if (name == "unit_cube")
      throw std::invalid_argument("pdeagent::build_mesh: unit_cube is 3-D: use a "
                                  "Triangulation<3>");
    const json p = merged_params(name, domain);
    tags = tag_names(name);
    tria.clear();
    const auto b = bbox2d(name, p);
    const double longest = std::max(b[1] - b[0], b[3] - b[2]);
    const int resolution = std::max(1, int(std::ceil(longest / h - 1e-9)));
    if (name == "unit_square" || name == "periodic_square")
      dealii::GridGenerator::subdivided_hyper_cube(tria, resolution, 0.0, 1.0);
    else
      gmsh_mesh(name, p, h, resolution, tria);

    const std::vector<Piece> ps = pieces(name, p);
    for (const auto &cell : tria.active_cell_iterators())
      for (const auto f : cell->face_indices())
        {
          if (!cell->face(f)->at_boundary())
            continue;
          const auto face = cell->face(f);
          if (ps.empty()) // the star: one tag, its exact outline as the manifold
            {
              face->set_boundary_id(0);
              if (attach_manifolds)
                face->set_manifold_id(1);
              continue;
            }
          const dealii::Point<2> c = face->center();
          std::size_t best = 0;
          double dmin = std::numeric_limits<double>::max();
          for (std::size_t k = 0; k < ps.size(); ++k)
            {
              const double d = piece_distance(c[0], c[1], ps[k]);
              if (d < dmin)
                {
                  dmin = d;
                  best = k;
                }
            }
          face->set_boundary_id(ps[best].tag);
          if (attach_manifolds && ps[best].arc)
            face->set_manifold_id(1 + best);
        }
    if (attach_manifolds && name == "star")
      tria.set_manifold(1, StarManifold(dealii::Point<2>(p["center"][0].get<double>(),
                                                         p["center"][1].get<double>()),
                                        num(p, "r0"), num(p, "amplitude"),
                                        p["n_points"].get<int>()));
    if (attach_manifolds)
      for (std::size_t k = 0; k < ps.size(); ++k)
        if (ps[k].arc)
          tria.set_manifold(1 + k, dealii::SphericalManifold<2>(
                                     dealii::Point<2>(ps[k].c.x, ps[k].c.y)));
  }

  // unit_cube: subdivided_hyper_cube with ceil(1/h) cells per side; boundary ids 0..5 =
  // xmin, xmax, ymin, ymax, zmin, zmax (nearest face plane of the face centre).
  inline void build_mesh(const nlohmann::json &domain, double h, dealii::Triangulation<3> &tria,
                         std::vector<std::string> &tags, bool /*attach_manifolds*/ = true)
  {
    const std::string name = domain.at("type").get<std::string>();
    if (name != "unit_cube")
      throw std::invalid_argument("pdeagent::build_mesh: '" + name +
                                  "' is 2-D: use a Triangulation<2>");
    if (!(h > 0.0))
      throw std::invalid_argument("pdeagent::build_mesh: the mesh size h must be positive");
    tags = meshing_detail::tag_names(name);
    tria.clear();
    const int n = std::max(1, int(std::ceil(1.0 / h - 1e-9)));
    dealii::GridGenerator::subdivided_hyper_cube(tria, n, 0.0, 1.0);
    for (const auto &cell : tria.active_cell_iterators())
      for (const auto f : cell->face_indices())
        if (cell->face(f)->at_boundary())
          {
            const dealii::Point<3> c = cell->face(f)->center();
            const double d[6] = {std::abs(c[0]),
                                 std::abs(1 - c[0]),
                                 std::abs(c[1]),
                                 std::abs(1 - c[1]),
                                 std::abs(c[2]),
                                 std::abs(1 - c[2])};
            cell->face(f)->set_boundary_id(std::min_element(d, d + 6) - d);
          }
  }

  // Boundary ids of the named tags ("all": every id), sorted and unique; unknown names
  // throw.  Call as boundary_ids(tags, {"all"}) or boundary_ids(tags, bc["boundary"]) (a
  // JSON array of strings converts implicitly).
  inline std::vector<dealii::types::boundary_id>
  boundary_ids(const std::vector<std::string> &tags, const std::vector<std::string> &names)
  {
    std::vector<dealii::types::boundary_id> ids;
    for (const auto &name : names)
      {
        if (name == "all")
          {
            for (std::size_t k = 0; k < tags.size(); ++k)
              ids.push_back(k);
            continue;
          }
        const auto it = std::find(tags.begin(), tags.end(), name);
        if (it == tags.end())
          {
            std::string known;
            for (const auto &t : tags)
              known += t + ", ";
            throw std::invalid_argument("pdeagent::boundary_ids: unknown boundary tag '" + name +
                                        "'; known: " + known + "all");
          }
        ids.push_back(it - tags.begin());
      }
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    return ids;
  }
} // namespace pdeagent
