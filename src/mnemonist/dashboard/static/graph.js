// The knowledge-graph view: dashboard-internal JSON drawn with the vendored vis-network.
"use strict";
document.addEventListener("DOMContentLoaded", async () => {
  const FONT_PX = 14; // a label's size at zoom 1
  const MIN_SCALE = 0.85; // labels on screen stay at least FONT_PX × this (about 12 px)
  const box = document.getElementById("graph");
  if (!box || typeof vis === "undefined") return;
  const response = await fetch(box.dataset.src, { credentials: "same-origin" });
  const data = await response.json();
  // the same name can be an entity in several projects: each says its project
  const where = (n) => n.project || "no project";
  const nodes = new vis.DataSet(data.nodes.map((n) => ({
    id: n.id, label: `${n.name}\n${where(n)}`, name: n.name, project: n.project,
    value: n.mentions, color: n.color, group: n.community,
    title: `${n.name} (${n.type}, ${where(n)}): ${n.mentions} memories,`
      + ` community ${n.community}`,
  })));
  const edges = new vis.DataSet(data.edges.map((e, i) => ({
    id: i, from: e.source, to: e.target, value: e.weight,
    title: `${e.type}, weight ${e.weight}`,
  })));
  const network = new vis.Network(box, { nodes, edges }, {
    nodes: {
      shape: "dot",
      // labels keep one size whatever the node's: big nodes do not shout, small ones stay legible
      scaling: { min: 8, max: 36, label: { enabled: false } },
      font: { size: FONT_PX, multi: false, strokeWidth: 3, strokeColor: "#ffffff" },
    },
    edges: { color: { inherit: "from", opacity: 0.5 }, smooth: false },
    physics: { stabilization: { iterations: 300 } },
    interaction: { hover: true, tooltipDelay: 100 },
  });
  window.mnemonistGraph = network;
  // a click on an entity searches the memories that name it, in its project
  network.on("click", (event) => {
    if (!event.nodes || event.nodes.length === 0) return;
    const node = nodes.get(event.nodes[0]);
    location.assign(`/?q=${encodeURIComponent(node.name)}`
      + (node.project ? `&project=${encodeURIComponent(node.project)}` : ""));
  });
  network.once("stabilizationIterationsDone", () => {
    network.setOptions({ physics: false });
    // fitting a large graph into the box zooms out until labels are a few pixels high: zoom
    // no further out than keeps them readable (drag and scroll to see the rest)
    network.fit({ animation: false });
    if (network.getScale() < MIN_SCALE) {
      network.moveTo({ scale: MIN_SCALE, animation: false });
    }
    box.dataset.labelPx = String(Math.round(FONT_PX * network.getScale() * 10) / 10);
  });
  // the number of nodes on the canvas, once it has been drawn (what the browser tests read)
  network.once("afterDrawing", () => {
    box.dataset.drawn = String(Object.keys(network.getPositions()).length);
  });
});
